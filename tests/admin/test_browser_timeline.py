"""The instance page's timeline in Chromium, while a payment runs and once it is paid."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import WorkflowInstance

from .conftest import SCREENSHOTS, instance_url, screenshot, wait_until
from .test_browser_live import in_a_thread, running

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BARS = """lane => Array.from(document.querySelectorAll(
        `#dwf-timeline g.dwf-tl-lane[data-lane="${lane}"] g.dwf-tl-bar`))
    .map(bar => [bar.dataset.outcome, bar.querySelector('title').textContent])"""
RUNNING_SO_FAR = """() => (document.querySelector(
    '#dwf-timeline g.dwf-tl-bar[data-outcome=running] title') || {}).textContent"""


def bars(page, lane: str) -> list[tuple[str, str]]:
    return [tuple(bar) for bar in page.evaluate(BARS, lane)]


def test_the_timeline_of_a_live_payment_draws_the_attempt_running_then_paid(page):
    instance = services.create("admin-payment", state={"ticks": 12, "tick": 0.25})  # 3 s
    worker = in_a_thread(lambda: services.start(instance))
    try:
        wait_until(lambda: running(instance))
        page.goto(instance_url(instance))
        timeline = page.locator("#dwf-timeline svg.dwf-timeline")
        assert timeline.is_visible()
        lanes = page.eval_on_selector_all("#dwf-timeline g.dwf-tl-lane",
                                          "lanes => lanes.map(l => l.dataset.lane)")
        assert lanes == ["steps", "operation:pay"]
        outcome, said = bars(page, "operation:pay")[-1]
        assert outcome == "running"
        assert said.startswith("attempt 1 of Payment")
        assert "so far)" in said
        assert bars(page, "steps")[-1][0] == "current"
        # Between revisions too: the running attempt's bar is drawn again up to now.
        page.wait_for_function(
            f"said => {{ const now = ({RUNNING_SO_FAR})(); return now && now !== said; }}",
            arg=said)
        page.locator("#dwf-timeline").screenshot(
            path=str(SCREENSHOTS / "timeline-payment-running.png"))

        page.wait_for_selector("#dwf-status.dwf-status-completed", timeout=15_000)
    finally:
        worker.join(timeout=30)
    done = WorkflowInstance.objects.get(pk=instance.pk)
    assert done.status == "completed"

    # Redrawn with the rest of the page: the attempt succeeded, each stay ended.
    paid = bars(page, "operation:pay")
    assert paid[-1][0] == "succeeded"  # after its wait for a worker, if it had to wait
    assert {outcome for outcome, _ in paid} <= {"queued", "succeeded"}
    assert paid[-1][1].startswith("attempt 1 of Payment")
    assert ": succeeded\n" in paid[-1][1]
    assert "so far" not in paid[-1][1]
    assert [outcome for outcome, _ in bars(page, "steps")] == ["completed", "completed"]
    page.hover("#dwf-timeline g.dwf-tl-bar[data-outcome=succeeded] rect")  # the tooltip's
    screenshot(page, "timeline-payment-paid")
