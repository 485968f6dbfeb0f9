"""The wizard page in a real browser: it drives the onboarding through the REST API."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group
from django.core import mail

from django_workflows import services
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import WorkflowInstance
from example_project.shop.models import Customer
from tests.factories import UserFactory

from .browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.needs_api, pytest.mark.slow,
              pytest.mark.urls("tests.example.urls")]

PASSWORD = "correct horse battery staple"


@pytest.fixture
def customer(transactional_db):
    return UserFactory(username="ann", password=PASSWORD)


@pytest.fixture
def page(browser, live_server, customer):
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
    on_screen(page, "email")  # the account is open; the page waits for the emailed link
    assert page.text_content("#email-address") == "ann@example.com"
    screenshot(page, "wizard-4-email")

    # Ann opens the link in her email, in another tab, and confirms; the wizard moves on.
    [email] = [m for m in mail.outbox if m.subject == "Confirm your email address"]
    link = urlsplit(re.search(r"http://\S+/email/confirm/\S+/", email.body)[0]).path
    tab = page.context.new_page()
    tab.goto(link)
    tab.click("#confirm-email")
    tab.wait_for_selector('#email-confirm[data-outcome="confirmed"]')
    on_screen(page, "done")  # the page polled
    screenshot(page, "wizard-5-done")

    assert page.text_content("#welcome") == (
        "Your account is open, Ann Lee. Your email address ann@example.com is confirmed.")
    onboarding = WorkflowInstance.objects.get(pk=onboarding_id)
    assert (onboarding.status, onboarding.skipped_steps) == ("completed", ["plan"])
    customer = Customer.objects.get(onboarding=onboarding_id)
    assert customer.plan == "starter" and customer.email_confirmed_at is not None


def test_a_value_the_state_schema_refuses_is_shown_beside_its_field(page):
    page.click("#start")
    on_screen(page, "profile")
    page.fill("#name", "A" * 101)
    page.fill("#email", "ann@example.com")
    page.click("#next")

    page.wait_for_selector("#name-error:not([hidden])")
    assert "is too long" in page.text_content("#name-error")
    screenshot(page, "wizard-schema-error")


def to_the_plan(page):
    page.click("#start")
    on_screen(page, "profile")
    page.fill("#name", "Ann Lee")
    page.fill("#email", "ann@example.com")
    page.click("#next")
    on_screen(page, "plan")


def test_a_reloaded_page_continues_where_the_customer_left_off(page):
    to_the_plan(page)

    page.goto("/wizard/")
    page.click("#resume")

    on_screen(page, "plan")


# -- the commands that apply, and whose errors are shown ------------------------------------


def buttons(page):
    """The command buttons the page shows."""
    return [name for name in ("back", "skip", "next") if page.is_visible(f"#{name}")]


def to_the_review(page):
    to_the_plan(page)
    page.click("#skip")
    on_screen(page, "document")
    page.fill("#document_number", "L01X00T47")
    page.click("#next")
    on_screen(page, "review")
    return page.url.split("instance=")[1]


def shown_revisions(onboarding_id):
    onboarding = WorkflowInstance.objects.get(pk=onboarding_id)
    child = WorkflowInstance.objects.get(pk=onboarding.nested_id)
    return f"{onboarding.revision} {child.revision}"


def test_each_screen_shows_the_commands_that_apply_and_no_others(page, operator):
    page.click("#start")
    on_screen(page, "profile")
    assert buttons(page) == ["next"]  # nothing to go back to; the details cannot be skipped
    page.fill("#name", "Ann Lee")
    page.fill("#email", "ann@example.com")
    page.click("#next")
    on_screen(page, "plan")
    assert buttons(page) == ["back", "skip", "next"]
    page.click("#skip")
    on_screen(page, "document")
    assert buttons(page) == ["back", "next"]  # the identity check is not skippable
    page.fill("#document_number", "L01X00T47")
    page.click("#next")
    on_screen(page, "review")
    assert buttons(page) == ["back"]  # next waits for the operator's decision (a task)
    screenshot(page, "wizard-buttons-review")

    onboarding_id = page.url.split("instance=")[1]
    child = WorkflowInstance.objects.get(parent_id=onboarding_id)
    services.complete(child, input={"decision": "approved"}, user=operator)
    on_screen(page, "confirm")
    assert buttons(page) == ["back", "next"]
    assert page.text_content("#next") == "Open my account"


def test_an_onboarding_made_but_not_started_starts_from_its_page(page, customer):
    onboarding = services.create("onboarding", user=customer)  # idle: only start applies

    page.goto(f"/wizard/?instance={onboarding.pk}")
    on_screen(page, "start")
    assert page.is_visible("#start") and page.is_hidden("#resume")
    page.click("#start")
    on_screen(page, "profile")

    onboarding.refresh_from_db()
    assert (onboarding.status, onboarding.current_step) == ("running", "profile")
    assert WorkflowInstance.objects.filter(workflow="onboarding").count() == 1


def test_the_customer_is_not_shown_an_error_of_the_operators_command(page, operator):
    onboarding_id = to_the_review(page)
    child = WorkflowInstance.objects.get(parent_id=onboarding_id)
    # The operator rejects the document without a reason: refused (only the review task
    # writes its decision, so this is the one way to try), and the check stays as it was.
    with pytest.raises(WorkflowNotMoved) as refused:
        services.complete(child, input={"decision": "rejected"}, user=operator)
    assert "Say why the document is rejected" in str(refused.value)
    child.refresh_from_db()
    assert (child.status, child.current_step) == ("running", "review")

    # The page polls while the review runs: it shows the check as it is now, without the error.
    page.wait_for_selector(f'#wizard[data-revisions="{shown_revisions(onboarding_id)}"]')
    on_screen(page, "review")
    screenshot(page, "wizard-operators-error-not-shown")
    assert page.is_hidden("#form-errors")
    assert "Say why" not in page.inner_text("#wizard")
    assert buttons(page) == ["back"]

    services.complete(child, input={"decision": "approved"}, user=operator)
    on_screen(page, "confirm")
    assert "Say why" not in page.inner_text("#wizard")


def test_an_error_about_a_field_on_the_screen_is_shown_whoever_met_it(page, customer, operator):
    onboarding = services.create("onboarding", user=customer, start=True)
    services.update_state(onboarding, lambda state: {**state, "name": "Ann Lee",
                                                     "email": "ann-at-example"}, user=operator)
    with pytest.raises(WorkflowNotMoved):
        services.next(onboarding, user=operator)  # stored on the onboarding: blocked

    page.goto(f"/wizard/?instance={onboarding.pk}")
    on_screen(page, "profile")

    assert page.text_content("#email-error") == "Enter an email address such as ann@example.com"
    assert buttons(page) == ["next"]  # fixing the email and sending the form goes on
    page.fill("#email", "ann@example.com")
    page.click("#next")
    on_screen(page, "plan")


def test_the_customer_sees_every_error_of_their_own_command(page):
    page.click("#start")
    on_screen(page, "profile")
    page.click("#next")  # nothing filled in

    page.wait_for_selector("#email-error:not([hidden])")
    assert page.text_content("#name-error") == "Enter your name"
    assert page.text_content("#email-error") == "Enter an email address such as ann@example.com"
