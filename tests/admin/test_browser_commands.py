"""The commands an instance page offers, in a real browser: those that apply, and why not.

Buttons come from the engine's "what applies now"; a refusal says what the rule said.
"""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Note

from .conftest import instance_url, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_workers(settings):
    """Work handed out stays queued: an instance at work that nothing moves on."""
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "RUNNER": "tests.admin.runners.HoldingRunner"}


def offered(page) -> list[str]:
    return page.eval_on_selector_all("#dwf-commands button[name=_command]",
                                     "buttons => buttons.map(b => b.textContent.trim())")


def why_not(page) -> dict[str, str]:
    page.click("#dwf-unavailable summary")
    return page.eval_on_selector_all(
        "#dwf-unavailable li[data-command]",
        "items => Object.fromEntries(items.map(i => [i.dataset.command, i.textContent.trim()]))")


def test_an_instance_at_work_offers_neither_next_nor_back_nor_retry(page, no_workers):
    instance = services.create("admin-slow", start=True)  # its operation waits for a worker

    page.goto(instance_url(instance))

    assert page.inner_text("#dwf-status") == "Running"
    assert offered(page) == ["Skip", "Validate", "Pause", "Cancel"]
    reasons = why_not(page)
    assert set(reasons) == {"start", "next", "back", "retry", "rollback", "resume", "rewind"}
    assert reasons["resume"] == 'Resume: Workflow "admin-slow" is not paused (status "running")'
    assert reasons["next"] == 'Next: Workflow step "crunch" still has work in progress'
    assert reasons["back"] == 'Back: Workflow "admin-slow" has no previous step'
    screenshot(page, "commands-of-an-instance-at-work")


def test_an_idle_instance_offers_start_and_cancel_but_not_retry_or_rollback(page):
    instance = services.create("admin-fragile")

    page.goto(instance_url(instance))

    assert offered(page) == ["Start", "Cancel"]
    reasons = why_not(page)
    assert {"next", "back", "retry", "rollback"} <= set(reasons)
    assert 'is not failed or blocked (status "idle")' in reasons["retry"]


def test_a_refused_cancel_says_what_the_exit_guard_said(page):
    instance = services.create("admin-claim", start=True)
    page.goto(instance_url(instance))
    assert "Cancel" in offered(page)
    Note.objects.create(text=f"paid {instance.pk}")  # paid out since the page was drawn

    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel this instance?"
    page.click("#dwf-commands button.dwf-command-cancel")
    page.wait_for_selector("ul.messagelist")

    assert ("Cancel refused: Paid claims cannot be cancelled: refund it instead"
            in page.inner_text("ul.messagelist"))
    assert page.inner_text("#dwf-status") == "Running"
    assert "Cancel" not in offered(page)  # and now the page says why beside the others
    assert "Paid claims cannot be cancelled: refund it instead" in why_not(page)["cancel"]
    screenshot(page, "cancel-refused-by-the-exit-guard")
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "running"
