"""Step timeouts and attempt timeouts: messages, stopping, late results, overlap."""

from __future__ import annotations

from datetime import timedelta

from django_workflows.engine import (
    AttemptFinished,
    AttemptOutcome,
    Branch,
    Cancelled,
    DeadlineDue,
    Operation,
    OperationTimeoutError,
    Step,
    Workflow,
)

from .helpers_work import Calls, chain, one_operation, op, pending_token, started

STEP_TIMEOUT = 'Workflow step "work" timed out after 60s'


def slow_step(*, retries: int = 0, calls: Calls | None = None) -> Workflow:
    calls = calls if calls is not None else Calls()
    return one_operation(Operation("op", run=calls.run("op", "late"), retries=retries),
                         timeout=60)


# -- step timeout -----------------------------------------------------------


def test_a_step_whose_work_outlives_its_timeout_fails_with_the_timeout_message():
    x, i = started(slow_step(), autorun=False)
    x.claim()

    x.advance(60)

    snap = x.snapshot(i)
    assert snap.status == "failed"
    assert snap.errors == (STEP_TIMEOUT,)
    assert [(e.type, e.step, e.error) for e in x.events_of(i)][-1] == (
        "error", "work", STEP_TIMEOUT)


def test_the_step_timeout_does_not_fire_before_its_deadline():
    x, i = started(slow_step(), autorun=False)
    x.claim()

    x.advance(59.9)

    assert x.snapshot(i).status == "running"
    assert op(x, i, "op").status == "running"


def test_the_step_timeout_message_prints_fractions_of_seconds():
    wf = one_operation(Operation("op", run=lambda ctx: 1), timeout=timedelta(seconds=1.5))
    x, i = started(wf, autorun=False)

    x.advance(1.5)

    assert x.snapshot(i).errors == ('Workflow step "work" timed out after 1.5s',)


def test_a_step_timeout_tells_the_running_attempt_to_stop():
    x, i = started(slow_step(), autorun=False)
    token = x.claim()

    x.advance(60)

    assert x.live[token].stop_reason == STEP_TIMEOUT
    assert [s.token for s in x.snapshot(i).stopping] == [token]
    operation = op(x, i, "op")
    assert operation.status == "cancelled"
    assert operation.error.message == STEP_TIMEOUT


def test_a_step_timeout_withdraws_an_attempt_not_yet_claimed():
    calls = Calls()
    x, i = started(slow_step(calls=calls), autorun=False)

    x.advance(60)

    assert x.pending == []
    assert x.snapshot(i).stopping == ()
    assert op(x, i, "op").status == "cancelled"
    assert calls == []


def test_a_step_timeout_during_a_retry_delay_stops_the_retries():
    calls = Calls()
    wf = one_operation(Operation("op", run=calls.failing("op"), retries=5, retry_delay=40),
                       timeout=60)
    x, i = started(wf)

    x.advance(600)

    assert calls == ["op", "op"]  # at 0s and at 40s; the retry due at 80s never came
    assert op(x, i, "op").status == "cancelled"
    assert x.snapshot(i).errors == (STEP_TIMEOUT,)


def test_a_late_result_after_a_step_timeout_is_discarded():
    x, i = started(slow_step(), autorun=False)
    token = x.claim()
    x.advance(60)

    outcome = x.command(i, AttemptFinished(token, AttemptOutcome(ok=True, value="late")))

    assert outcome.moved
    operation = op(x, i, "op")
    assert (operation.status, operation.result) == ("cancelled", None)
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).stopping == ()


def test_check_cancelled_tells_a_running_attempt_its_step_timed_out():
    seen = []

    def run(ctx):
        try:
            ctx.check_cancelled()
        except Cancelled as stop:
            seen.append(str(stop))
            raise

    x, i = started(one_operation(Operation("op", run=run), timeout=60), autorun=False)
    token = x.claim()
    x.advance(60)

    x.finish(token)

    assert seen == [STEP_TIMEOUT]
    assert op(x, i, "op").status == "cancelled"
    assert x.snapshot(i).stopping == ()


def test_retry_is_refused_while_the_timed_out_attempt_is_still_stopping():
    x, i = started(slow_step(), autorun=False)
    x.claim()
    x.advance(60)
    before = x.snapshot(i)

    outcome = x.retry(i)

    assert (outcome.moved, outcome.code) == (False, "still_stopping")
    assert x.snapshot(i) == before


def test_retry_runs_the_step_again_once_the_timed_out_attempt_stopped():
    calls = Calls()
    x, i = started(slow_step(calls=calls), autorun=False)
    token = x.claim()
    x.advance(60)
    x.finish(token)

    outcome = x.retry(i)
    x.run_pending()

    assert outcome.moved
    assert op(x, i, "op").status == "succeeded"
    assert op(x, i, "op").result == "late"
    assert x.snapshot(i).status == "running"


def test_a_retry_after_a_step_timeout_gets_a_fresh_deadline():
    x, i = started(slow_step(), autorun=False)
    token = x.claim()
    x.advance(60)
    x.finish(token)
    x.advance(100)

    x.retry(i)
    x.claim()
    x.advance(59)
    assert x.snapshot(i).status == "running"
    x.advance(1)

    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (STEP_TIMEOUT,)


def test_work_that_finishes_in_time_clears_the_step_deadline():
    x, i = started(slow_step())

    assert op(x, i, "op").status == "succeeded"
    assert x.deadlines == {}
    x.advance(120)
    assert x.snapshot(i).status == "running"


def test_a_step_with_a_timeout_but_no_background_work_has_no_deadline():
    x, i = started(chain(Step("work", timeout=5, enter=lambda ctx: None), Step("after")))

    x.advance(10)

    assert x.snapshot(i).status == "running"
    assert x.deadlines == {}


def test_a_step_timeout_stops_running_branches_and_discards_their_results():
    wf = Workflow("wf", steps=[Step("work", timeout=60, parallel=[
        Branch("fast", run=lambda ctx: None), Branch("slow", run=lambda ctx: None)])])
    x, i = started(wf, autorun=False)
    x.finish(x.claim(pending_token(x, "work:fast")))
    slow = x.claim(pending_token(x, "work:slow"))

    x.advance(60)
    x.finish(slow)

    branches = {b.id: (b.status, b.error) for b in x.snapshot(i).parallel}
    assert branches == {"fast": ("succeeded", None), "slow": ("cancelled", STEP_TIMEOUT)}
    assert x.snapshot(i).errors == (STEP_TIMEOUT,)
    assert x.snapshot(i).stopping == ()


def test_a_nested_child_is_not_bound_by_its_parent_steps_timeout():
    child = Workflow("child", steps=[Step("wait")])
    wf = Workflow("wf", steps=[Step("work", nested=child, timeout=5)])
    x, i = started(wf)

    x.advance(60)

    assert x.snapshot(i).status == "running"
    assert x.snapshot(i).nested.status == "running"


# -- attempt timeout --------------------------------------------------------

ATTEMPT_TIMEOUT = "Operation timed out after 30s"


def timing_out(*, retries: int = 0, retry_delay: float | None = None,
               calls: Calls | None = None) -> Workflow:
    calls = calls if calls is not None else Calls()
    return one_operation(Operation("op", run=calls.run("op", "done"), retries=retries,
                                   retry_delay=retry_delay, timeout=30))


def test_an_attempt_that_outlives_its_timeout_fails_with_operation_timed_out():
    x, i = started(timing_out(), autorun=False)
    x.claim()

    x.advance(30)

    operation = op(x, i, "op")
    assert operation.status == "failed"
    assert (operation.error.name, operation.error.message) == (
        "OperationTimeoutError", ATTEMPT_TIMEOUT)
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (ATTEMPT_TIMEOUT,)


def test_an_attempt_timeout_counts_from_when_the_attempt_was_claimed():
    x, i = started(timing_out(), autorun=False)
    x.advance(100)  # queued for a while: no attempt is running yet
    x.claim()

    x.advance(29)

    assert op(x, i, "op").status == "running"


def test_a_timed_out_attempt_is_told_to_stop():
    x, i = started(timing_out(retries=1), autorun=False)
    token = x.claim()

    x.advance(30)

    assert x.live[token].stop_reason == ATTEMPT_TIMEOUT
    assert [s.token for s in x.snapshot(i).stopping] == [token]


def test_the_next_attempt_starts_only_once_the_timed_out_attempt_stopped():
    x, i = started(timing_out(retries=1), autorun=False)
    token = x.claim()
    x.advance(30)

    assert op(x, i, "op").status == "waiting"
    assert x.pending == []
    x.advance(300)
    assert x.pending == []

    x.finish(token)

    assert [(p.target, p.attempt) for p in x.pending] == [("op", 2)]
    assert op(x, i, "op").status == "queued"
    assert x.snapshot(i).stopping == ()


def test_two_attempts_of_one_operation_never_overlap():
    running = []
    overlaps = []

    def run(ctx):
        if running:
            overlaps.append(ctx.attempt)
        running.append(ctx.attempt)
        x.clock.advance(45)  # longer than the timeout, and never checks
        running.remove(ctx.attempt)
        return "done"

    wf = one_operation(Operation("op", run=run, retries=2, timeout=30))
    x, i = started(wf, autorun=False)
    first = x.claim()
    x.advance(30)
    x.finish(first)
    second = x.claim()

    assert overlaps == []
    assert op(x, i, "op").status == "retrying"
    assert second is not None and second != first


def test_the_interrupted_worker_of_a_timed_out_attempt_also_lets_the_next_attempt_start():
    x, i = started(timing_out(retries=1), autorun=False)
    token = x.claim()
    x.advance(30)

    x.interrupt(token)

    assert [p.attempt for p in x.pending] == [2]
    assert x.snapshot(i).status == "running"


def test_the_retry_delay_after_a_timeout_counts_from_when_the_attempt_stopped():
    x, i = started(timing_out(retries=1, retry_delay=5), autorun=False)
    token = x.claim()
    x.advance(30)
    x.advance(10)

    x.finish(token)

    assert op(x, i, "op").retry_at == x.clock.now() + 5
    x.advance(5)
    assert [p.attempt for p in x.pending] == [2]


def test_the_late_result_of_a_timed_out_attempt_is_discarded():
    x, i = started(timing_out(retries=1), autorun=False)
    token = x.claim()
    x.advance(30)

    x.command(i, AttemptFinished(token, AttemptOutcome(ok=True, value="too late")))

    operation = op(x, i, "op")
    assert operation.result is None
    assert operation.status == "queued"
    assert operation.attempt == 2


def test_the_retried_attempt_after_a_timeout_can_succeed():
    x, i = started(timing_out(retries=1), autorun=False)
    token = x.claim()
    x.advance(30)
    x.finish(token)

    x.run_pending()

    operation = op(x, i, "op")
    assert (operation.status, operation.attempt, operation.result) == ("succeeded", 2, "done")


def test_a_timed_out_last_attempt_fails_the_step_and_retry_waits_for_it_to_stop():
    x, i = started(timing_out(), autorun=False)
    token = x.claim()
    x.advance(30)

    refused = x.retry(i)
    x.finish(token)
    accepted = x.retry(i)

    assert (refused.moved, refused.code) == (False, "still_stopping")
    assert accepted.moved
    assert op(x, i, "op").status == "queued"


def test_an_attempt_that_finishes_in_time_clears_its_deadline():
    x, i = started(timing_out())

    assert op(x, i, "op").status == "succeeded"
    assert x.deadlines == {}


def test_check_cancelled_raises_operation_timeout_error_once_the_attempt_timed_out():
    seen = []

    def run(ctx):
        x.clock.advance(31)
        try:
            ctx.check_cancelled()
        except OperationTimeoutError as error:
            seen.append(str(error))
            raise
        return "not reached"

    x, i = started(one_operation(Operation("op", run=run, timeout=30)), autorun=False)
    x.finish(x.claim())

    assert seen == [ATTEMPT_TIMEOUT]
    assert op(x, i, "op").error.name == "OperationTimeoutError"
    assert x.snapshot(i).errors == (ATTEMPT_TIMEOUT,)


def test_check_cancelled_does_not_raise_before_the_attempt_deadline():
    def run(ctx):
        x.clock.advance(29)
        ctx.check_cancelled()
        return "in time"

    x, i = started(one_operation(Operation("op", run=run, timeout=30)), autorun=False)
    x.finish(x.claim())

    assert op(x, i, "op").result == "in time"


def test_a_cooperative_attempt_that_timed_out_is_retried():
    def run(ctx):
        if ctx.attempt == 1:
            ctx.sleep(100)  # ctx.sleep checks for the timeout as it waits
        return f"attempt {ctx.attempt}"

    x, i = started(one_operation(Operation("op", run=run, retries=1, timeout=30)))

    assert op(x, i, "op").result == "attempt 2"
    assert x.snapshot(i).stopping == ()


def test_a_result_returned_after_the_attempt_deadline_counts_as_a_timeout():
    def run(ctx):
        x.clock.advance(31)  # never checks, returns late
        return "late"

    x, i = started(one_operation(Operation("op", run=run, timeout=30)), autorun=False)
    x.finish(x.claim())

    operation = op(x, i, "op")
    assert operation.status == "failed"
    assert operation.error.message == ATTEMPT_TIMEOUT
    assert operation.result is None


def test_a_step_timeout_withdraws_branches_not_yet_claimed_so_retry_can_go_on():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", timeout=60, parallel=[
        Branch("a", run=calls.hook("a")), Branch("b", run=calls.hook("b"))])])
    x, i = started(wf, autorun=False)

    x.advance(60)

    assert x.pending == []
    assert x.snapshot(i).stopping == ()
    assert x.retry(i).moved
    x.run_pending()
    assert sorted(calls) == ["a", "b"]


# -- stale deadlines --------------------------------------------------------


def test_a_step_deadline_that_fires_after_the_work_finished_is_refused_as_stale():
    x, i = started(slow_step(), autorun=False)
    (deadline,) = x.deadlines.values()
    x.run_pending()
    before = x.snapshot(i)

    outcome = x.command(i, DeadlineDue("step-timeout", deadline.token))

    assert (outcome.moved, outcome.code) == (False, "stale_deadline")
    assert x.snapshot(i) == before


def test_an_attempt_deadline_that_fires_after_the_attempt_finished_is_refused_as_stale():
    x, i = started(timing_out(), autorun=False)
    token = x.claim()
    x.finish(token)
    before = x.snapshot(i)

    outcome = x.command(i, DeadlineDue("attempt-timeout", token))

    assert (outcome.moved, outcome.code) == (False, "stale_deadline")
    assert x.snapshot(i) == before


def test_a_retry_deadline_that_fires_after_a_cancel_is_refused_as_stale():
    x, i = started(one_operation(Operation("op", run=Calls().failing("op"), retries=1,
                                           retry_delay=5)))
    token = op(x, i, "op").token
    x.cancel(i)
    before = x.snapshot(i)

    outcome = x.command(i, DeadlineDue("retry", token))

    assert (outcome.moved, outcome.code) == (False, "stale_deadline")
    assert x.snapshot(i) == before
    assert x.pending == []


def test_an_operation_rerun_after_update_state_unblocked_it_gets_a_fresh_step_deadline():
    def needs_email(ctx):
        if not ctx.state.get("email"):
            ctx.block("An email address is needed")
        return "sent"

    wf = one_operation(Operation("op", run=needs_email), timeout=60)
    x, i = started(wf, autorun=False)
    x.finish(x.claim())
    assert x.snapshot(i).status == "blocked"
    x.advance(100)  # long after the first deadline would have fired

    x.update_state(i, {"email": "ann@example.com"})
    x.claim()
    x.advance(60)

    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (STEP_TIMEOUT,)


def test_cancelling_a_running_attempt_clears_its_attempt_deadline():
    x, i = started(one_operation(Operation("op", run=lambda c: 1, timeout=30)), autorun=False)
    x.claim()
    assert len(x.deadlines) == 1

    x.cancel(i)

    assert x.deadlines == {}
