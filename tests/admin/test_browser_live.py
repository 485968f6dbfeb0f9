"""The instance page in a real browser while the instance moves: all of it current, or none.

The page polls its live view; once the revision moved on it swaps every live part at
once. These tests keep a page open while work runs on another thread (the immediate
runner runs it there) or while the test moves the instance, and read what the page
shows.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from django_workflows import services
from django_workflows.models import WorkflowInstance
from django_workflows.reading.queries import live_operations

from .conftest import instance_url, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Set on the page before the run: whether the "changed, reload it" notice ever showed.
WATCH_THE_NOTICE = """() => {
    window.dwfNoticeShown = false;
    const notice = document.getElementById('dwf-changed');
    new MutationObserver(() => { if (!notice.hidden) { window.dwfNoticeShown = true; } })
        .observe(notice, {attributes: true});
}"""


def in_a_thread(work) -> threading.Thread:
    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="admin-live-worker")
    thread.start()
    return thread


def running(instance) -> bool:
    return [live.operation.status for live in live_operations(
        WorkflowInstance.objects.get(pk=instance.pk))] == ["running"]


def marks(page) -> dict[str, str]:
    return page.eval_on_selector_all(
        "#dwf-diagram g.dwf-step",
        "steps => Object.fromEntries(steps.map(s => [s.dataset.step, s.dataset.mark]))")


def test_the_page_of_a_live_payment_ends_with_every_part_current(page):
    instance = services.create("admin-payment", state={"ticks": 16, "tick": 0.25})  # 4 s
    worker = in_a_thread(lambda: services.start(instance))  # the payment runs in the thread
    try:
        wait_until(lambda: running(instance))
        page.goto(instance_url(instance))
        page.evaluate(WATCH_THE_NOTICE)
        assert page.inner_text("#dwf-status") == "Running"
        assert marks(page) == {"charge": "current", "receipt": ""}
        screenshot(page, "live-payment-running")

        page.wait_for_selector('#dwf-status.dwf-status-completed', timeout=15_000)
    finally:
        worker.join(timeout=30)
    assert not worker.is_alive()
    done = WorkflowInstance.objects.get(pk=instance.pk)
    assert done.status == "completed"

    # Every part shows the instance as it is now, and the page never asked for a reload.
    assert page.get_attribute("#content-main", "data-revision") == str(done.revision)
    assert page.inner_text("#dwf-revision") == str(done.revision)
    assert page.inner_text("#dwf-current-step") == "Send the receipt receipt"
    assert page.inner_text("#dwf-finished") == f"{done.completed_at:%Y-%m-%d %H:%M:%S}"
    assert marks(page) == {"charge": "completed", "receipt": "completed"}
    row = page.locator('tr.dwf-operation[data-operation="pay"]')
    assert row.locator(".dwf-op-status").inner_text() == "succeeded"
    assert row.locator(".dwf-outcome").inner_text() == "succeeded"
    assert not row.locator("progress.dwf-progress").is_visible()
    listed = page.locator("#dwf-events tr.dwf-event")
    assert int(page.inner_text("#dwf-events-count")) == listed.count() == done.last_event
    assert listed.first.locator("td").first.inner_text() == str(done.last_event)
    assert page.locator("#dwf-commands button.dwf-command-cancel").count() == 0
    assert "Cancel" in page.inner_text("#dwf-unavailable summary")
    assert page.is_hidden("#dwf-changed")
    assert page.evaluate("() => window.dwfNoticeShown") is False
    screenshot(page, "live-payment-completed")


def test_an_unsaved_state_edit_holds_the_page_back_and_says_so(page):
    instance = services.create("wizard", start=True)
    page.goto(instance_url(instance))
    page.click("#dwf-state-edit summary")
    typed = '{"email": "ann@example.com", "plan": "pro"}'
    page.fill("#dwf-state-form textarea", typed)
    shown = WorkflowInstance.objects.get(pk=instance.pk).revision

    services.update_state(instance, {"email": "bob@example.com", "plan": None})

    page.wait_for_selector("#dwf-changed", state="visible")
    assert page.is_visible("#dwf-changed .dwf-changed-unsaved")
    assert page.input_value("#dwf-state-form textarea") == typed  # nothing was swapped
    assert "bob@example.com" not in page.inner_text("#dwf-state-json")
    assert page.inner_text("#dwf-revision") == str(shown)
    screenshot(page, "live-unsaved-edit-kept")


def test_a_page_behind_its_instance_catches_up_and_keeps_open_sections_open(page):
    instance = services.create("wizard", start=True)
    page.goto(instance_url(instance))
    page.click("#dwf-unavailable summary")  # "Why not ...?" folded open

    services.update_state(instance, {"email": "bob@example.com", "plan": None})
    moved = WorkflowInstance.objects.get(pk=instance.pk)

    page.wait_for_function(
        f"() => document.getElementById('dwf-revision').textContent === '{moved.revision}'")
    assert "bob@example.com" in page.inner_text("#dwf-state-json")
    assert page.input_value("#dwf-commands input[name=revision]") == str(moved.revision)
    assert page.get_attribute("#dwf-unavailable", "open") is not None
    assert page.is_hidden("#dwf-changed")
