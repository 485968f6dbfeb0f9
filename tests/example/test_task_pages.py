"""An operator decides a customer's identity check in the admin, in a real browser.

The customer (alice) walks the wizard to the review; the operator logs in to the
admin, sees the inbox count on the index page, opens *Tasks*, opens the task,
sends its form with a bad value (the error shows beside its field), then a good
one; alice's wizard, which polls, moves on to the confirmation.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission

from django_workflows.models import WorkflowInstance, WorkflowTask
from tests.factories import UserFactory

from .browser import launch, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.needs_api, pytest.mark.slow,
              pytest.mark.urls("tests.example.urls")]

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the test's ORM calls
        with sync_playwright() as playwright:
            browser = launch(playwright)
            yield browser
            browser.close()


def signed_in(browser, live_server, login_path: str, username: str):
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto(login_path)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("[type=submit]")
    return page


def on_screen(page, name):
    page.wait_for_selector(f'#wizard[data-showing="{name}"]:not([aria-busy])')


@pytest.fixture
def people(transactional_db):
    UserFactory(username="alice", password=PASSWORD)
    operator = UserFactory(username="operator", password=PASSWORD, is_staff=True)
    operators = Group.objects.get_or_create(name="operators")[0]
    operators.permissions.add(*Permission.objects.filter(
        content_type__app_label="django_workflows"))
    operator.groups.add(operators)


def test_the_operator_decides_through_the_inbox_and_the_wizard_moves_on(browser, live_server,
                                                                       people):
    alice = signed_in(browser, live_server, "/wizard/", "alice")
    alice.wait_for_url("**/wizard/")
    alice.click("#start")
    on_screen(alice, "profile")
    alice.fill("#name", "Alice")
    alice.fill("#email", "alice@example.com")
    alice.click("#next")
    on_screen(alice, "plan")
    alice.click("#skip")
    on_screen(alice, "document")
    alice.fill("#document_number", "L01X00T47")
    alice.click("#next")
    on_screen(alice, "review")

    operator = signed_in(browser, live_server, "/admin/login/?next=/admin/", "operator")
    operator.wait_for_selector("#dwf-inbox-count")
    assert operator.text_content("#dwf-inbox-count") == "1"
    screenshot(operator, "tasks-1-admin-index")
    operator.click("#dwf-inbox-link a.section")
    operator.click("text=Review an identity document")
    operator.wait_for_selector("#dwf-task-form")
    shown = operator.text_content("#dwf-task-shows")  # what is decided, above the form
    assert "Passport" in shown and "L01X00T47" in shown
    screenshot(operator, "tasks-2-task-page")

    operator.select_option("select[name=decision]", "rejected")  # without the reason
    operator.click("#dwf-complete")
    operator.wait_for_selector(".field-reason.errors, .errornote")
    assert "Say why the document is rejected" in operator.text_content("#dwf-task-form")
    assert WorkflowTask.objects.get(status="open").input is None
    screenshot(operator, "tasks-3-error-beside-its-field")

    operator.select_option("select[name=decision]", "approved")
    operator.click("#dwf-complete")
    operator.wait_for_selector("#dwf-task-decided")
    assert "operator" in operator.text_content("#dwf-task-decided")
    screenshot(operator, "tasks-4-decided")

    on_screen(alice, "confirm")  # the wizard polled and moved on
    child = WorkflowInstance.objects.get(workflow="identity-check")
    assert (child.status, child.state["review"]) == ("completed", {"decision": "approved"})
