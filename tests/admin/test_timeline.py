"""The instance's timeline read from its events (graph/timeline_events.py), and drawn.

Events are written here as the engine emits them (type, step, data, error), at times in
seconds from ``T``; each test reads the lanes a person would read on the page.
"""

from __future__ import annotations

import re
from datetime import UTC

import pytest

from django_workflows import Operation, Step, Workflow, services
from django_workflows.admin.timeline import timeline_context
from django_workflows.graph.timeline import AttemptRow, Child, Happening, Timeline, Titles
from django_workflows.graph.timeline_events import timeline_of
from django_workflows.graph.timeline_svg import timeline_svg
from django_workflows.models import WorkflowInstance
from django_workflows.testing import FakeClock
from django_workflows.testing.local import LocalExecutor

from .conftest import instance_url

T = 1_790_000_000.0  # 2026-09-21 14:13:20 UTC


def at(seconds: float, type_: str, step: str = "", error: str | None = None,
       actor: str | None = None, **data) -> Happening:
    return Happening(type_, T + seconds, step, data, error, actor)


def lane(timeline: Timeline, key: str):
    return next(found for found in timeline.lanes if found.key == key)


def bars(timeline: Timeline, key: str) -> list[tuple[float, float | None, str, str]]:
    """A lane's bars as (start, end, outcome, label), in seconds from T."""
    return [(b.start - T, None if b.end is None else round(b.end - T, 3), b.outcome, b.label)
            for b in lane(timeline, key).bars]


def marks(timeline: Timeline, key: str) -> list[tuple[float, str, str]]:
    return [(m.at - T, m.kind, m.text) for m in lane(timeline, key).marks]


PAID = [at(0, "start"), at(0, "step-enter", "charge"),
        at(0, "operation-queued", "charge", operation="pay", attempt=1),
        at(1, "operation-started", "charge", operation="pay", attempt=1)]


def test_each_stay_in_a_step_is_a_bar_from_entered_to_left_skipped_or_back():
    timeline = timeline_of([
        at(0, "start"), at(0, "step-enter", "account"), at(5, "step-leave", "account"),
        at(5, "skip", "plan", unavailable=True), at(5, "step-enter", "confirm"),
        at(9, "back", "account"), at(12, "skip", "account"), at(12, "step-enter", "confirm"),
    ], now=T + 20, titles=Titles(steps={"account": "Your account"}))

    assert bars(timeline, "steps") == [
        (0, 5, "completed", "Your account"), (5, 9, "went back", "confirm"),
        (9, 12, "skipped", "Your account"), (12, None, "current", "confirm")]
    assert (5, "skip", "plan skipped: not available") in marks(timeline, "steps")
    assert timeline.running and timeline.end == T + 20


def test_a_finished_instance_ends_its_last_stay_when_it_finished():
    timeline = timeline_of([at(0, "start"), at(0, "step-enter", "a"), at(4, "complete", "a")],
                           now=T + 100, status="completed", finished_at=T + 4)

    assert bars(timeline, "steps") == [(0, 4, "completed", "a")]
    assert not timeline.running and timeline.end == T + 4


def test_an_attempt_is_its_wait_for_a_worker_then_its_run():
    timeline = timeline_of([*PAID, at(4, "operation-succeeded", "charge", operation="pay",
                                     attempt=1)],
                           now=T + 5, titles=Titles(operations={"pay": "Payment"}))

    assert lane(timeline, "operation:pay").label == "Payment"
    assert bars(timeline, "operation:pay") == [(0, 1, "queued", "#1 queued"),
                                               (1, 4, "succeeded", "#1")]


def test_a_retry_is_the_failed_attempt_its_retry_delay_and_the_next_attempt():
    timeline = timeline_of([
        *PAID,
        at(4, "operation-retrying", "charge", "Payment provider unavailable (503)",
           operation="pay", attempt=2, delay=3),
        at(7, "operation-queued", "charge", operation="pay", attempt=2),
        at(7.5, "operation-started", "charge", operation="pay", attempt=2),
        at(9, "operation-succeeded", "charge", operation="pay", attempt=2),
    ], now=T + 10)

    assert bars(timeline, "operation:pay") == [
        (0, 1, "queued", "#1 queued"), (1, 4, "failed", "#1"),
        (4, 7, "retry-wait", "retry wait"),
        (7, 7.5, "queued", "#2 queued"), (7.5, 9, "succeeded", "#2")]
    failed = lane(timeline, "operation:pay").bars[1]
    assert failed.detail == "attempt 1 of pay: failed: Payment provider unavailable (503)"


def test_a_retry_delay_still_running_goes_on_to_its_due_time():
    timeline = timeline_of([*PAID, at(4, "operation-retrying", "charge", "boom",
                                      operation="pay", attempt=2, delay=30)], now=T + 10)

    waiting = lane(timeline, "operation:pay").bars[-1]
    assert (waiting.outcome, waiting.end, waiting.planned_end) == ("retry-wait", None, T + 34)


def test_a_timed_out_attempt_is_marked_and_runs_on_until_its_worker_stopped():
    timeline = timeline_of([
        *PAID,
        at(31, "operation-retrying", "charge", "Operation timed out after 30 s",
           operation="pay", attempt=2, delay=2),
        at(33, "attempt-stopped", kind="operation", target="pay", reason="timed out",
           finished=False),
        at(35, "operation-queued", "charge", operation="pay", attempt=2),
    ], now=T + 36)

    assert bars(timeline, "operation:pay") == [
        (0, 1, "queued", "#1 queued"), (1, 31, "timed out", "#1"),
        (31, 33, "stopping", "stopping"), (33, 35, "retry-wait", "retry wait"),
        (35, None, "queued", "#2 queued")]
    assert marks(timeline, "operation:pay") == [(31, "timeout", "attempt 1 timed out")]


def test_a_claim_the_events_do_not_know_yet_is_drawn_running_from_its_row():
    queued = PAID[:3]
    row = AttemptRow("operation", "pay", 1, "running", T, claimed_at=T + 2, worker="w-7")

    timeline = timeline_of(queued, now=T + 5, attempts=[row])

    assert bars(timeline, "operation:pay") == [(0, 2, "queued", "#1 queued"),
                                               (2, None, "running", "#1")]
    assert "on w-7" in lane(timeline, "operation:pay").bars[1].detail


def test_a_task_is_a_bar_from_opened_to_decided_saying_who_decided():
    timeline = timeline_of([
        at(0, "step-enter", "approve"),
        at(0, "task-open", "approve", task="t1", candidates=["managers"]),
        at(60, "task-claim", "approve", actor="ann", task="t1"),
        at(90, "task-complete", "approve", actor="ann", task="t1", input={"ok": True}),
    ], now=T + 100, titles=Titles(tasks={"approve": "Approve the claim"}))

    assert lane(timeline, "task:approve").label == "task: Approve the claim"
    assert bars(timeline, "task:approve") == [(0, 90, "done", "decided by ann")]
    assert marks(timeline, "task:approve") == [(60, "claim", "claimed by ann")]
    assert "candidates: managers" in lane(timeline, "task:approve").bars[0].detail


def test_waits_for_a_signal_and_a_timer_are_bars_until_it_came_or_fired():
    timeline = timeline_of([
        at(0, "step-enter", "pay"),
        at(0, "signal-wait", "pay", signal="payment-confirmed", correlation="ch_1",
           until=T + 600),
        at(40, "signal", "pay", signal="payment-confirmed", sender="bank"),
        at(40, "step-leave", "pay"), at(40, "step-enter", "cool"),
        at(40, "timer-wait", "cool", until=T + 100),
    ], now=T + 50)

    assert bars(timeline, "waits") == [(0, 40, "arrived", "signal payment-confirmed"),
                                       (40, None, "waiting", "timer")]
    arrived, timer = lane(timeline, "waits").bars
    assert arrived.detail == ("waited for the signal payment-confirmed (ch_1): it arrived "
                              "from bank")
    assert timer.planned_end == T + 100


def test_a_nested_child_is_a_lane_of_its_steps():
    child = Child("Verify identity 1a2b3c4d", [
        at(2, "start"), at(2, "step-enter", "upload"), at(8, "step-leave", "upload"),
        at(8, "step-enter", "review")])

    timeline = timeline_of([at(0, "step-enter", "identity")], now=T + 10, children=[child],
                           child_titles={child.label: Titles(steps={"upload": "Upload"})})

    assert lane(timeline, "child:Verify identity 1a2b3c4d").label == \
        "↳ Verify identity 1a2b3c4d"
    assert bars(timeline, "child:Verify identity 1a2b3c4d") == [
        (2, 8, "completed", "Upload"), (8, None, "current", "review")]


def test_the_steps_lane_comes_first_then_lanes_by_when_they_began():
    timeline = timeline_of([
        at(0, "step-enter", "a"), at(1, "task-open", "a", task="t", candidates=[]),
        *[at(t + 2, e.type, e.step, **e.data) for e in PAID[1:] for t in [e.at - T]],
    ], now=T + 10)

    assert [found.key for found in timeline.lanes] == ["steps", "task:a", "operation:pay"]


# -- drawn ---------------------------------------------------------------------------------


def titles_of_bars(svg: str) -> list[str]:
    return re.findall(r'<g class="dwf-tl-bar" data-outcome="[^"]+"><title>([^<]*)</title>', svg)


def test_hovering_a_bar_says_its_times_and_outcome():
    timeline = timeline_of([*PAID, at(4, "operation-succeeded", "charge", operation="pay",
                                     attempt=1)],
                           now=T + 5, status="completed", finished_at=T + 4)

    svg = timeline_svg(timeline, tz=UTC)

    assert "attempt 1 of pay: succeeded\n2026-09-21 14:13:21 to 2026-09-21 14:13:24 (3.0 s)" \
        in titles_of_bars(svg)


def test_a_bar_still_going_says_so_far():
    svg = timeline_svg(timeline_of(PAID, now=T + 3), tz=UTC)

    assert "attempt 1 of pay: running\n2026-09-21 14:13:21 to now (2.0 s so far)" \
        in titles_of_bars(svg)


def test_the_drawing_escapes_what_the_definition_and_the_events_say():
    timeline = timeline_of([at(0, "step-enter", "a"),
                            at(1, "error", "a", "<script>alert(1)</script>")],
                           now=T + 2, titles=Titles(steps={"a": "Tom & <Jerry>"}))

    svg = timeline_svg(timeline, tz=UTC)

    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert "Tom &amp; &lt;Jerry&gt;" in svg


def test_a_long_idle_gap_is_cut_short_and_says_how_long_it_was():
    timeline = timeline_of([at(0, "step-enter", "a"), at(2, "step-leave", "a"),
                            at(2, "step-enter", "b"), at(2 + 2 * 86400, "step-leave", "b"),
                            at(2 + 2 * 86400, "step-enter", "c"),
                            at(5 + 2 * 86400, "complete", "c")],
                           now=T + 10 ** 6, status="completed", finished_at=T + 5 + 2 * 86400)

    svg = timeline_svg(timeline, tz=UTC)

    assert re.search(r'<g class="dwf-tl-break"><title>Nothing happened for 2 d', svg)
    widths = [float(w) for w in re.findall(
        r'data-outcome="completed"><title>[^<]*</title><rect x="[\d.]+" y="[\d.]+" '
        r'width="([\d.]+)"', svg)]
    assert len(widths) == 3 and min(widths[0], widths[2]) > 100  # seconds still readable


# -- on the instance page ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_draws_a_failed_attempt_and_its_retry_on_the_timeline(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("admin-fragile", start=True)  # the download fails once
    with django_capture_on_commit_callbacks(execute=True):
        services.retry(instance)

    content = root_client.get(instance_url(instance)).content.decode()

    drawn = re.search(r'<section class="[^"]*" id="dwf-timeline">(.*?)</section>', content,
                      re.S).group(1)
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="dwf-timeline"' in drawn
    assert re.findall(r'data-lane="([^"]+)"', drawn) == ["steps", "operation:download"]
    said = [title.split("\n")[0] for title in titles_of_bars(drawn)]
    failed, succeeded = [t for t in said if t.startswith("attempt 1 of Download on ")]
    assert failed.endswith(": failed: feed unavailable (503)")
    assert succeeded.endswith(": succeeded")
    assert "Fetch the feed (fetch): completed" in said
    assert "Review (review): current" in said


@pytest.mark.django_db
def test_the_timeline_reads_a_few_queries_however_many_events(
        root_client, django_assert_max_num_queries):
    instance = services.create("wizard", start=True)
    for _ in range(30):
        services.update_state(instance, {"email": "ann@example.com", "plan": None})

    with django_assert_max_num_queries(4):
        timeline_context(WorkflowInstance.objects.get(pk=instance.pk))


@pytest.mark.django_db
def test_the_page_of_a_parent_draws_its_nested_childs_steps_in_a_lane_of_their_own(
        root_client):
    parent = services.next(services.create("parent", start=True))  # the child starts
    parent = services.next(parent)  # passed to the child: review -> decide

    content = root_client.get(instance_url(parent)).content.decode()

    child = WorkflowInstance.objects.get(parent=parent)
    lane = f"child:child-check {str(child.pk)[:8]}"
    assert re.findall(r'data-lane="([^"]+)"', content) == ["steps", lane]
    drawn = re.search(rf'data-lane="{lane}".*?</g>(?=<g class="dwf-tl-lane"|</svg>)', content,
                      re.S).group(0)
    said = [t.split("\n")[0] for t in titles_of_bars(drawn)]
    assert said == ["review (review): completed", "decide (decide): current"]


def test_the_engines_own_events_of_a_timed_out_attempt_and_its_retry_draw_as_meant():
    definition = Workflow(id="tl-timeout", steps=[Step("pay", advance="auto", operations=[
        Operation("charge", run=lambda ctx: {"ok": True}, retries=1, retry_delay=2,
                  timeout=30)])])
    engine = LocalExecutor(definition, clock=FakeClock(T), autorun=False)
    instance = engine.create("tl-timeout")
    engine.start(instance)
    first = engine.claim()
    engine.advance(31)  # attempt 1 times out at +30 and is told to stop
    engine.advance(4)
    engine.finish(first)  # its worker stops at +35: the retry's delay runs from then
    engine.advance(2)
    engine.finish(engine.claim())

    happened = [Happening(e.type, e.at, e.step or "", dict(e.data), e.error)
                for e in engine.events_of(instance)]
    timeline = timeline_of(happened, now=T + 40, status="completed", finished_at=T + 37)

    assert bars(timeline, "operation:charge") == [
        (0, 30, "timed out", "#1"), (30, 35, "stopping", "stopping"),
        (35, 37, "retry-wait", "retry wait"), (37, 37, "succeeded", "#2")]
    assert marks(timeline, "operation:charge") == [(30, "timeout", "attempt 1 timed out")]
