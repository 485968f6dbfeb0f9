"""The wizard page in a real browser: it drives the onboarding through the REST API."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.models import WorkflowInstance
from example_project.shop.models import Customer
from tests.factories import UserFactory

from .browser import launch, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.needs_api, pytest.mark.slow,
              pytest.mark.urls("tests.example.urls")]

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread while the browser is
    # open; the test's own ORM calls (and the database teardown) are still synchronous.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = launch(playwright)
            yield browser
            browser.close()


@pytest.fixture
def page(browser, live_server, transactional_db):
    UserFactory(username="ann", password=PASSWORD)
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto("/wizard/")
    page.fill("#id_username", "ann")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/wizard/")
    yield page
    context.close()


def on_screen(page, name):
    page.wait_for_selector(f'#wizard[data-showing="{name}"]:not([aria-busy])')


def approve_identity_check(onboarding_id):
    """What an operator does in the admin or through the API."""
    operator = UserFactory(username="olga", is_staff=True)
    operator.groups.add(Group.objects.get_or_create(name="operators")[0])
    child = WorkflowInstance.objects.get(parent_id=onboarding_id)
    services.complete(child, input={"decision": "approved"},
                      user=type(operator).objects.get(pk=operator.pk))


def test_a_customer_walks_the_wizard_with_a_mistake_a_step_back_and_a_skip(page):
    page.click("#start")
    on_screen(page, "profile")
    page.fill("#name", "Ann Lee")
    page.fill("#email", "ann-at-example")
    page.click("#next")
    page.wait_for_selector("#email-error:not([hidden])")
    assert page.text_content("#email-error") == "Enter an email address such as ann@example.com"
    assert page.get_attribute("#email", "aria-invalid") == "true"
    assert page.is_hidden("#name-error")
    screenshot(page, "wizard-1-field-error")

    page.fill("#email", "ann@example.com")
    page.click("#next")
    on_screen(page, "plan")
    screenshot(page, "wizard-2-plan")
    page.click("#back")
    on_screen(page, "profile")
    assert page.input_value("#name") == "Ann Lee"
    page.click("#next")
    on_screen(page, "plan")
    page.click("#skip")
    on_screen(page, "document")
    page.select_option("#document_type", "id_card")
    page.fill("#document_number", "L01X00T47")
    page.click("#next")
    on_screen(page, "review")
    screenshot(page, "wizard-3-review")

    onboarding_id = page.url.split("instance=")[1]
    approve_identity_check(onboarding_id)
    on_screen(page, "confirm")  # the page polls while the review runs
    assert page.text_content("#summary-plan") == "Starter (free)"
    page.click("#back")
    on_screen(page, "identity")  # checked already: it is not asked again
    page.click("#next")
    on_screen(page, "confirm")
    page.check("#accept_terms")
    page.click("#next")
    on_screen(page, "done")
    screenshot(page, "wizard-4-done")

    assert "Your account is open, Ann Lee." in page.text_content("#welcome")
    onboarding = WorkflowInstance.objects.get(pk=onboarding_id)
    assert (onboarding.status, onboarding.skipped_steps) == ("completed", ["plan"])
    assert Customer.objects.get(onboarding=onboarding_id).plan == "starter"


def test_a_value_the_state_schema_refuses_is_shown_beside_its_field(page):
    page.click("#start")
    on_screen(page, "profile")
    page.fill("#name", "A" * 101)
    page.fill("#email", "ann@example.com")
    page.click("#next")

    page.wait_for_selector("#name-error:not([hidden])")
    assert "is too long" in page.text_content("#name-error")
    screenshot(page, "wizard-schema-error")


def test_a_reloaded_page_continues_where_the_customer_left_off(page):
    page.click("#start")
    on_screen(page, "profile")
    page.fill("#name", "Ann Lee")
    page.fill("#email", "ann@example.com")
    page.click("#next")
    on_screen(page, "plan")

    page.goto("/wizard/")
    page.click("#resume")

    on_screen(page, "plan")
