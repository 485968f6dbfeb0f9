"""Recovery in a real browser (Chromium): pause and resume with a worker's result held in
between, rewind by choosing a step, bulk retry with its grouped report, a rollback's record,
and the confirmations of back from completed and of start after a rollback."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.engine import AttemptOutcome
from django_workflows.models import Attempt, WorkflowInstance

from .conftest import changelist_url, instance_url, screenshot, wait_until
from .test_recovery import recovery_workflows  # noqa: F401  (admin-order, registered)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_workers(settings):
    """Work handed out stays queued until the test plays the worker."""
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "RUNNER": "tests.admin.runners.HoldingRunner"}


def reload(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def offered(page) -> list[str]:
    return page.eval_on_selector_all("#dwf-commands button[name=_command]",
                                     "buttons => buttons.map(b => b.textContent.trim())")


def press(page, name: str) -> None:
    page.click(f"#dwf-commands button.dwf-command-{name}")
    page.wait_for_selector("ul.messagelist")


def test_pause_holds_a_workers_result_until_resume_moves_the_step_on(page, no_workers):
    instance = services.create("admin-slow", start=True)
    page.goto(instance_url(instance))
    assert "Pause" in offered(page)

    page.fill("#id_pause-reason", "the numbers look wrong")
    press(page, "pause")

    assert page.inner_text("#dwf-status") == "Paused"
    assert "the numbers look wrong" in page.inner_text("#dwf-paused-words")
    assert offered(page) == ["Resume", "Cancel"]
    assert reload(instance).status == "paused"

    # A worker that had the attempt reports now: held, and the open page follows.
    token = Attempt.objects.get(instance=instance).token
    claimed = services.claim_attempt(token, worker="w")
    assert services.finish_claimed(claimed, AttemptOutcome(ok=True, value={"ticks": 20}))
    page.wait_for_selector("#dwf-paused-held li[data-command=attempt_finished]")
    assert reload(instance).current_step == "crunch"
    screenshot(page, "recovery-paused-with-a-result-held")

    press(page, "resume")

    wait_until(lambda: page.inner_text("#dwf-current-step").strip().endswith("done"))
    assert page.inner_text("#dwf-status") == "Running"
    assert page.query_selector("#dwf-paused") is None
    row = reload(instance)
    assert (row.status, row.current_step, row.snap.paused) == ("running", "done", None)


def test_rewind_goes_back_to_the_step_chosen(page):
    instance = services.create("admin-order", start=True)
    services.next(instance)
    services.next(instance)
    page.goto(instance_url(instance))

    options = page.eval_on_selector_all("select[name=rewind-step] option",
                                        "options => options.map(o => o.value)")
    assert options == ["pack", "pay"]
    page.select_option("select[name=rewind-step]", "pay")
    press(page, "rewind")

    assert 'Rewind: done; the instance is now running at step "pay".' in \
        page.inner_text("ul.messagelist")
    assert reload(instance).history == ["pay"]
    screenshot(page, "recovery-rewound")


def test_bulk_retry_says_how_many_moved_and_why_the_others_did_not(page):
    failed = [services.create("admin-fragile", start=True) for _ in range(2)]
    assert {reload(i).status for i in failed} == {"failed"}
    running = [services.create("admin-order", start=True) for _ in range(2)]
    page.goto(changelist_url())

    for instance in (*failed, *running):
        page.check(f"#result_list tr:has(.dwf-id[title='{instance.pk}']) input.action-select")
    page.select_option("select[name=action]", "retry_selected")
    page.click("button[name=index]")
    page.wait_for_selector("ul.messagelist li.success")

    shown = page.inner_text("ul.messagelist")
    assert "Retry: 2 instances moved." in shown
    assert ('2 instances not moved: Retry refused: Workflow "admin-order" is not failed or '
            'blocked (status "running")') in shown
    assert shown.count("Retry refused") == 1  # one message for both, not one each
    assert [reload(i).current_step for i in failed] == ["review", "review"]
    screenshot(page, "recovery-bulk-retry")


def test_a_rollback_leaves_its_record_and_start_asks_first(page):
    instance = services.create("admin-order", state={"order": "B-2"}, start=True)
    services.next(instance)
    page.goto(instance_url(instance))

    page.once("dialog", lambda dialog: dialog.accept())  # "Roll back this instance?"
    press(page, "rollback")

    wait_until(lambda: reload(instance).status == "idle")
    page.goto(instance_url(instance))
    assert page.inner_text("#dwf-status") == "Rolled back"
    assert "by root" in page.inner_text("#dwf-rolled-back-words")
    assert '{"refund": "re_B-2"}' in page.inner_text("#dwf-rolled-back-items")
    assert "pay → pack" in page.inner_text("#dwf-rolled-back-before")
    page.click("#dwf-rolled-back-state summary")
    assert '"order": "B-2"' in page.inner_text("#dwf-rolled-back-state pre")
    screenshot(page, "recovery-rolled-back-record")

    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#dwf-commands button.dwf-command-start")
    assert asked == ['Workflow "admin-order" was rolled back: starting it runs its steps and '
                     "their work again. Start?"]
    assert reload(instance).status == "idle"  # dismissed: nothing was done

    page.once("dialog", lambda dialog: dialog.accept())
    press(page, "start")
    assert reload(instance).status == "running"


def test_back_on_a_completed_order_asks_before_it_reopens_it(page):
    instance = services.create("admin-order", start=True)
    for _ in range(3):
        services.next(instance)
    assert reload(instance).status == "completed"
    page.goto(instance_url(instance))

    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#dwf-commands button.dwf-command-back")
    assert asked == ['Workflow "admin-order" is completed: going back reopens it. Back?']
    assert reload(instance).status == "completed"

    page.once("dialog", lambda dialog: dialog.accept())
    press(page, "back")

    assert page.inner_text("#dwf-status") == "Running"
    assert (reload(instance).status, reload(instance).current_step) == ("running", "pack")
    screenshot(page, "recovery-reopened")
