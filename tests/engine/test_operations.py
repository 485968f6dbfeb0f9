"""Operations: sequential attempts, retries, delays, blocking, children, logs, fencing."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from django_workflows.engine import (
    AttemptFinished,
    AttemptOutcome,
    AttemptStarted,
    Cancelled,
    DefinitionError,
    Operation,
    StaleOperation,
    Step,
)

from .helpers_work import Calls, chain, fails_calls, fails_first, one_operation, op, started, types

# -- order and statuses -----------------------------------------------------


def test_operations_of_a_step_run_one_after_the_other():
    calls = Calls()
    wf = chain(Step("work", operations=[Operation("first", run=calls.run("first")),
                                        Operation("second", run=calls.run("second"))]))
    x, i = started(wf, autorun=False)

    assert [p.target for p in x.pending] == ["first"]
    assert op(x, i, "first").status == "queued"
    assert x.snapshot(i).operation("second") is None

    x.finish(x.claim())

    assert calls == ["first"]
    assert [p.target for p in x.pending] == ["second"]
    assert op(x, i, "second").status == "queued"


def test_a_dispatched_operation_is_queued_until_a_worker_claims_it():
    x, i = started(one_operation(Operation("op", run=lambda ctx: 1)), autorun=False)

    assert op(x, i, "op").status == "queued"
    assert op(x, i, "op").attempt == 1
    assert types(x, i, prefix="operation-") == ["operation-queued"]


def test_a_claimed_first_attempt_is_running():
    x, i = started(one_operation(Operation("op", run=lambda ctx: 1)), autorun=False)

    x.claim()

    assert op(x, i, "op").status == "running"
    assert op(x, i, "op").started_at == x.clock.now()
    assert types(x, i, prefix="operation-") == ["operation-queued", "operation-started"]


def test_a_claimed_later_attempt_is_retrying():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1)), autorun=False)
    x.finish(x.claim())

    x.claim()

    assert op(x, i, "op").status == "retrying"
    assert op(x, i, "op").attempt == 2


def test_an_operation_waits_during_its_retry_delay():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1, retry_delay=5)))

    operation = op(x, i, "op")
    assert operation.status == "waiting"
    assert operation.retry_at == x.clock.now() + 5
    assert operation.error.message == "attempt 1 failed"
    assert x.pending == []


def test_an_operation_that_returns_succeeds_with_its_result():
    x, i = started(one_operation(Operation("op", run=lambda ctx: {"tenant": 42})))

    operation = op(x, i, "op")
    assert operation.status == "succeeded"
    assert operation.result == {"tenant": 42}
    assert operation.completed_at == x.clock.now()
    assert operation.error is None


def test_a_simple_successful_run_emits_queued_started_succeeded():
    x, i = started(one_operation(Operation("op", run=lambda ctx: None)))

    assert types(x, i, prefix="operation-") == [
        "operation-queued", "operation-started", "operation-succeeded"]


def test_the_first_attempt_is_numbered_one():
    seen = []
    x, i = started(one_operation(Operation("op", run=lambda ctx: seen.append(ctx.attempt))))

    assert seen == [1]
    assert op(x, i, "op").attempt == 1


# -- retries ----------------------------------------------------------------


def test_retries_count_extra_attempts():
    attempts = []
    x, i = started(one_operation(Operation("op", run=fails_first(99, calls=attempts), retries=3)))

    assert attempts == [1, 2, 3, 4]
    assert op(x, i, "op").attempt == 4


def test_negative_retries_mean_a_single_attempt():
    attempts = []
    x, i = started(one_operation(Operation("op", run=fails_first(99, calls=attempts),
                                           retries=-2)))

    assert attempts == [1]
    assert op(x, i, "op").status == "failed"


def test_an_operation_that_succeeds_on_a_retry_succeeds_with_that_attempt():
    attempts = []
    x, i = started(one_operation(Operation("op", run=fails_first(2, "third time", attempts),
                                           retries=3)))

    operation = op(x, i, "op")
    assert attempts == [1, 2, 3]
    assert (operation.status, operation.attempt, operation.result) == ("succeeded", 3, "third time")
    assert operation.error is None
    assert x.snapshot(i).status == "running"


def test_each_failed_attempt_with_retries_left_emits_operation_retrying():
    x, i = started(one_operation(Operation("op", run=fails_first(2), retries=2)))

    retrying = [e for e in x.events_of(i) if e.type == "operation-retrying"]
    assert [e.data["attempt"] for e in retrying] == [2, 3]
    assert [e.error for e in retrying] == ["attempt 1 failed", "attempt 2 failed"]


def test_the_first_attempt_start_time_is_kept_across_retries():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1, retry_delay=10)))
    first_start = x.snapshot(i).started_at

    x.run_until_settled()

    assert op(x, i, "op").started_at == first_start
    assert op(x, i, "op").completed_at == first_start + 10


def test_the_previous_error_is_cleared_when_the_next_attempt_starts():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1)), autorun=False)
    x.finish(x.claim())
    assert op(x, i, "op").error.message == "attempt 1 failed"

    x.claim()

    assert op(x, i, "op").status == "retrying"
    assert op(x, i, "op").error is None


def test_the_retry_delay_is_a_deadline_that_grows_with_backoff():
    x, i = started(one_operation(Operation("op", run=fails_first(99), retries=3, retry_delay=2,
                                           backoff=3)))
    t0 = x.clock.now()
    due = []
    for _ in range(3):
        due.append(op(x, i, "op").retry_at - t0)
        x.advance(op(x, i, "op").retry_at - x.clock.now())

    assert due == [2, 2 + 6, 2 + 6 + 18]
    assert op(x, i, "op").status == "failed"


def test_max_retry_delay_caps_the_delay():
    x, i = started(one_operation(Operation("op", run=fails_first(99), retries=4, retry_delay=2,
                                           backoff=10, max_retry_delay=5)))
    delays = []
    while op(x, i, "op").status == "waiting":
        delays.append(op(x, i, "op").retry_at - x.clock.now())
        x.advance(delays[-1])

    assert delays == [2, 5, 5, 5]


def test_the_next_attempt_is_not_dispatched_before_its_retry_deadline():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1, retry_delay=3)),
                   autorun=False)
    x.finish(x.claim())

    x.advance(2.9)
    assert x.pending == []
    assert op(x, i, "op").status == "waiting"

    x.advance(0.1)
    assert [p.attempt for p in x.pending] == [2]
    assert op(x, i, "op").status == "queued"


def test_exhausted_retries_fail_the_step_with_the_last_error():
    x, i = started(one_operation(Operation("op", run=fails_first(99), retries=2)))

    snap = x.snapshot(i)
    assert snap.status == "failed"
    assert snap.errors == ("attempt 3 failed",)
    assert op(x, i, "op").status == "failed"
    assert op(x, i, "op").error.message == "attempt 3 failed"
    assert op(x, i, "op").error.name == "RuntimeError"


def test_a_failed_operation_emits_operation_failed_then_a_workflow_error():
    x, i = started(one_operation(Operation("op", run=fails_first(99))))

    events = [e for e in x.events_of(i) if e.type in ("operation-failed", "error")]
    assert [(e.type, e.step, e.error) for e in events] == [
        ("operation-failed", "work", "attempt 1 failed"),
        ("error", "work", "attempt 1 failed"),
    ]


def test_a_failed_operation_stops_the_operations_after_it():
    calls = Calls()
    wf = chain(Step("work", operations=[Operation("first", run=calls.failing("first")),
                                        Operation("second", run=calls.run("second"))]))
    x, i = started(wf)

    assert calls == ["first"]
    assert x.snapshot(i).operation("second") is None


# -- blocking ---------------------------------------------------------------


def needs_email(ctx):
    if not ctx.state.get("email"):
        ctx.block("An email address is needed")
    return ctx.state["email"]


def test_block_makes_the_workflow_blocked_with_the_message():
    x, i = started(one_operation(Operation("op", run=needs_email)))

    snap = x.snapshot(i)
    assert snap.status == "blocked"
    assert snap.errors == ("An email address is needed",)
    assert op(x, i, "op").status == "blocked"
    assert op(x, i, "op").error.name == "OperationBlockedError"
    assert types(x, i, prefix="operation-")[-1] == "operation-blocked"


def test_a_blocked_operation_is_not_retried():
    attempts = []

    def run(ctx):
        attempts.append(ctx.attempt)
        ctx.block("Waiting for approval")

    x, i = started(one_operation(Operation("op", run=run, retries=3)))

    assert attempts == [1]
    assert x.snapshot(i).status == "blocked"


def test_update_state_reruns_a_blocked_operation():
    x, i = started(one_operation(Operation("op", run=needs_email)))

    outcome = x.update_state(i, {"email": "ann@example.com"})

    assert outcome.moved
    assert x.snapshot(i).status == "running"
    assert x.snapshot(i).errors == ()
    assert op(x, i, "op").status == "succeeded"
    assert op(x, i, "op").result == "ann@example.com"


def test_update_state_lets_a_blocked_auto_step_move_on():
    wf = chain(Step("work", advance="auto", operations=[Operation("op", run=needs_email)]),
               Step("done"))
    x, i = started(wf)

    x.update_state(i, {"email": "ann@example.com"})

    assert x.snapshot(i).current_step == "done"


def test_retry_reruns_a_blocked_operation():
    answers = iter([None, "approved"])

    def run(ctx):
        answer = next(answers)
        if answer is None:
            ctx.block("Waiting for approval")
        return answer

    x, i = started(one_operation(Operation("op", run=run)))
    assert x.snapshot(i).status == "blocked"

    outcome = x.retry(i)

    assert outcome.moved
    assert x.snapshot(i).status == "running"
    assert op(x, i, "op").result == "approved"


# -- children ---------------------------------------------------------------


def test_children_of_a_successful_attempt_are_kept_with_their_results():
    def run(ctx):
        a = ctx.run_child(Operation("child-a", run=lambda c: "A"))
        b = ctx.run_child(Operation("child-b", run=lambda c: "B"))
        return a + b

    x, i = started(one_operation(Operation("parent", run=run)))

    parent = op(x, i, "parent")
    assert parent.result == "AB"
    assert [(c.id, c.status, c.result) for c in parent.children] == [
        ("child-a", "succeeded", "A"), ("child-b", "succeeded", "B")]


def test_children_of_a_failed_attempt_are_discarded():
    def run(ctx):
        ctx.run_child(Operation(f"child-{ctx.attempt}", run=lambda c: "ok"))
        if ctx.attempt == 1:
            raise RuntimeError("parent failed after its child")
        return "done"

    x, i = started(one_operation(Operation("parent", run=run, retries=1)))

    assert [c.id for c in op(x, i, "parent").children] == ["child-2"]


def test_children_are_dropped_when_the_operation_fails_for_good():
    def run(ctx):
        ctx.run_child(Operation("child", run=lambda c: "ok"))
        raise RuntimeError("no")

    x, i = started(one_operation(Operation("parent", run=run)))

    assert op(x, i, "parent").status == "failed"
    assert op(x, i, "parent").children == ()


def test_a_child_retries_on_its_own_within_the_parent_attempt():
    child_attempts = []
    child = Operation("child", run=fails_first(2, "child ok", child_attempts), retries=2)
    parent_attempts = []

    def run(ctx):
        parent_attempts.append(ctx.attempt)
        return ctx.run_child(child)

    x, i = started(one_operation(Operation("parent", run=run)))

    assert child_attempts == [1, 2, 3]
    assert parent_attempts == [1]
    assert op(x, i, "parent").result == "child ok"
    assert op(x, i, "parent").children[0].attempt == 3


def test_a_child_that_exhausts_its_retries_fails_the_parent_attempt_with_its_error():
    child = Operation("child", run=fails_first(99, message="child broke"), retries=1)
    x, i = started(one_operation(Operation("parent", run=lambda ctx: ctx.run_child(child))))

    assert op(x, i, "parent").status == "failed"
    assert x.snapshot(i).errors == ("child broke",)


def test_a_child_that_blocks_blocks_the_workflow():
    child = Operation("child", run=lambda c: c.block("Child needs a signature"))
    x, i = started(one_operation(Operation("parent", run=lambda ctx: ctx.run_child(child))))

    assert x.snapshot(i).status == "blocked"
    assert x.snapshot(i).errors == ("Child needs a signature",)


# -- logs and progress ------------------------------------------------------


def test_logs_are_kept_across_attempts():
    def run(ctx):
        ctx.log(f"attempt {ctx.attempt} begins")
        if ctx.attempt == 1:
            raise RuntimeError("first try fails")
        return "ok"

    x, i = started(one_operation(Operation("op", run=run, retries=1)))

    assert op(x, i, "op").logs == ("attempt 1 begins", "attempt 2 begins")


def test_an_operation_keeps_only_its_newest_1000_log_lines():
    def run(ctx):
        for n in range(1500):
            ctx.log(f"line {n}")

    x, i = started(one_operation(Operation("op", run=run)))

    logs = op(x, i, "op").logs
    assert len(logs) == 1000
    assert (logs[0], logs[-1]) == ("line 500", "line 1499")


def test_the_log_bound_applies_across_attempts():
    def run(ctx):
        for n in range(700):
            ctx.log(f"attempt {ctx.attempt} line {n}")
        if ctx.attempt == 1:
            raise RuntimeError("again")

    x, i = started(one_operation(Operation("op", run=run, retries=1)))

    logs = op(x, i, "op").logs
    assert len(logs) == 1000
    assert (logs[0], logs[-1]) == ("attempt 1 line 400", "attempt 2 line 699")


def test_max_logs_sets_how_many_log_lines_an_operation_keeps():
    def run(ctx):
        for n in range(10):
            ctx.log(f"line {n}")

    x, i = started(chain(
        Step("a", operations=[Operation("three", run=run, max_logs=3),
                              Operation("none", run=run, max_logs=0)])))

    assert op(x, i, "three").logs == ("line 7", "line 8", "line 9")
    assert op(x, i, "none").logs == ()


def test_max_logs_must_be_a_whole_number_of_zero_or_more():
    with pytest.raises(DefinitionError, match="max_logs must be an int >= 0"):
        Operation("op", run=lambda ctx: None, max_logs=-1)


def test_a_child_still_running_in_a_thread_is_told_to_stop_when_its_attempt_ends():
    """SEED-RULES O-5: the children an attempt started are cancelled when it fails."""
    seen: dict[str, object] = {}
    started_child, stopped = threading.Event(), threading.Event()

    def child_run(ctx):
        started_child.set()
        deadline = time.monotonic() + 10
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["cancelled"] = ctx.cancelled
        stopped.set()

    def run_the_child(ctx):
        with contextlib.suppress(Cancelled):  # it stopped, as told
            ctx.run_child(Operation("slow-child", run=child_run))

    def run(ctx):
        worker = threading.Thread(target=run_the_child, args=(ctx,), daemon=True)
        worker.start()
        assert started_child.wait(10)
        raise RuntimeError("the parent attempt fails")

    x, i = started(one_operation(Operation("op", run=run)))

    assert stopped.wait(10)
    assert seen["cancelled"] is True
    assert op(x, i, "op").status == "failed"


def test_logs_of_a_failed_attempt_are_kept():
    def run(ctx):
        ctx.log("about to fail")
        raise RuntimeError("failed")

    x, i = started(one_operation(Operation("op", run=run)))

    assert op(x, i, "op").logs == ("about to fail",)


def test_progress_is_reported_while_the_attempt_runs():
    seen = []

    def run(ctx):
        ctx.progress(1, 3, "first third")
        (live,) = x.live.values()
        seen.append(live.progress)
        ctx.log("working")
        seen.append(list(live.logs))
        return "ok"

    x, _ = started(one_operation(Operation("op", run=run)), autorun=False)
    x.finish(x.claim())

    assert (seen[0].current, seen[0].total, seen[0].message) == (1, 3, "first third")
    assert seen[1] == ["working"]


def test_the_last_progress_is_kept_on_the_operation():
    def run(ctx):
        ctx.progress(1, 2)
        ctx.progress(2, 2, "all done")

    x, i = started(one_operation(Operation("op", run=run)))

    progress = op(x, i, "op").progress
    assert (progress.current, progress.total, progress.message) == (2, 2, "all done")


def test_wait_for_shows_the_running_attempt_as_waiting():
    seen = []

    def run(ctx):
        return ctx.wait_for(lambda: seen.append(next(iter(x.live.values())).status) or "got it")

    x, i = started(one_operation(Operation("op", run=run)), autorun=False)
    x.finish(x.claim())

    assert seen == ["waiting"]
    assert op(x, i, "op").result == "got it"


# -- results ----------------------------------------------------------------


def test_a_result_that_is_not_json_fails_the_attempt():
    x, i = started(one_operation(Operation("op", run=lambda ctx: {1, 2})))

    operation = op(x, i, "op")
    assert operation.status == "failed"
    assert operation.error.name == "TypeError"
    assert operation.error.message.startswith("Operation result is not JSON serialisable")


def test_a_result_that_is_not_json_is_retried_like_any_failure():
    attempts = []

    def run(ctx):
        attempts.append(ctx.attempt)
        return object() if ctx.attempt == 1 else "fine"

    x, i = started(one_operation(Operation("op", run=run, retries=1)))

    assert attempts == [1, 2]
    assert op(x, i, "op").result == "fine"


def test_a_result_is_stored_as_its_json_value():
    x, i = started(one_operation(Operation("op", run=lambda ctx: {"ids": (1, 2), "n": 1.5})))

    assert op(x, i, "op").result == {"ids": [1, 2], "n": 1.5}


# -- fencing ----------------------------------------------------------------


def test_a_claim_with_an_unknown_token_is_refused_and_changes_nothing():
    x, i = started(one_operation(Operation("op", run=lambda ctx: 1)), autorun=False)
    before = x.snapshot(i)

    outcome = x.command(i, AttemptStarted("not-a-token"))

    assert (outcome.moved, outcome.code) == (False, "stale_attempt")
    assert outcome.events == () and outcome.effects == ()
    assert x.snapshot(i) == before


def test_a_second_claim_of_the_same_attempt_is_refused():
    x, i = started(one_operation(Operation("op", run=lambda ctx: 1)), autorun=False)
    token = x.claim()
    before = x.snapshot(i)

    outcome = x.command(i, AttemptStarted(token))

    assert (outcome.moved, outcome.code) == (False, "stale_attempt")
    assert x.snapshot(i) == before


def test_a_claim_of_an_attempt_still_in_its_retry_delay_is_refused():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1, retry_delay=5)))
    waiting = op(x, i, "op")

    outcome = x.command(i, AttemptStarted(waiting.token))

    assert outcome.code == "stale_attempt"
    assert op(x, i, "op") == waiting


def test_a_stale_attempt_picked_up_by_a_worker_never_runs_the_user_code():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=calls.run("op"))), autorun=False)
    (run,) = x.pending
    x.cancel(i)
    x.pending.append(run)  # the queue delivers the message anyway

    assert x.claim(run.token) is None
    assert calls == []
    assert op(x, i, "op").status == "cancelled"


def test_a_finish_with_an_unknown_token_is_refused_and_changes_nothing():
    x, i = started(one_operation(Operation("op", run=lambda ctx: 1)), autorun=False)
    x.claim()
    before = x.snapshot(i)

    outcome = x.command(i, AttemptFinished("not-a-token", AttemptOutcome(ok=True, value=2)))

    assert (outcome.moved, outcome.code) == (False, "stale_attempt")
    assert x.snapshot(i) == before


def test_a_finish_of_an_attempt_that_already_reported_is_refused():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1)), autorun=False)
    token = x.claim()
    x.finish(token)
    before = x.snapshot(i)

    outcome = x.command(i, AttemptFinished(token, AttemptOutcome(ok=True, value="late")))

    assert outcome.code == "stale_attempt"
    assert x.snapshot(i) == before
    assert op(x, i, "op").status == "queued"


def test_the_result_of_an_attempt_told_to_stop_is_discarded():
    x, i = started(one_operation(Operation("op", run=lambda ctx: 1)), autorun=False)
    token = x.claim()
    x.cancel(i)

    x.command(i, AttemptFinished(token, AttemptOutcome(ok=True, value="late")))

    assert op(x, i, "op").status == "cancelled"
    assert op(x, i, "op").result is None
    assert x.snapshot(i).stopping == ()


# -- succeeded work is not run again ----------------------------------------


def test_succeeded_operations_are_not_run_again_when_the_step_is_reentered():
    calls = Calls()
    wf = chain(Step("first"), Step("work", operations=[Operation("op", run=calls.run("op"))]))
    x, i = started(wf)
    x.next(i)
    assert calls == ["op"]

    x.back(i)
    x.next(i)

    assert x.snapshot(i).current_step == "work"
    assert calls == ["op"]
    assert op(x, i, "op").status == "succeeded"


def test_succeeded_operations_are_not_run_again_on_retry():
    calls = Calls()
    second = fails_calls(1, "second ok")
    wf = chain(Step("work", operations=[
        Operation("first", run=calls.run("first", "first ok")),
        Operation("second", run=lambda ctx: calls.append("second") or second(ctx)),
    ]))
    x, i = started(wf)
    assert x.snapshot(i).status == "failed"

    x.retry(i)

    assert calls == ["first", "second", "second"]
    assert op(x, i, "first").result == "first ok"
    assert op(x, i, "second").result == "second ok"


@pytest.mark.parametrize("retries", [0, 2])
def test_a_failed_operation_starts_again_from_its_first_attempt_on_retry(retries):
    attempts = []
    x, i = started(one_operation(Operation("op", run=fails_calls(retries + 1, "ok", attempts),
                                           retries=retries)))
    assert x.snapshot(i).status == "failed"

    x.retry(i)

    assert attempts == [*range(1, retries + 2), 1]
    assert op(x, i, "op").status == "succeeded"


def test_a_child_that_outlives_its_own_timeout_is_retried_within_the_parent_attempt():
    attempts = []

    def child_run(ctx):
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            x.clock.advance(11)  # longer than the child's timeout
        return f"child attempt {ctx.attempt}"

    child = Operation("child", run=child_run, retries=1, timeout=10)
    x, i = started(one_operation(Operation("parent", run=lambda ctx: ctx.run_child(child))),
                   autorun=False)
    x.finish(x.claim())

    assert attempts == [1, 2]
    assert op(x, i, "parent").result == "child attempt 2"


def test_a_child_is_not_retried_once_its_parent_attempt_timed_out():
    attempts = []

    def child_run(ctx):
        attempts.append(ctx.attempt)
        x.clock.advance(31)  # past the parent's timeout
        raise RuntimeError("child failed")

    child = Operation("child", run=child_run, retries=5)
    x, i = started(one_operation(Operation("parent", run=lambda ctx: ctx.run_child(child),
                                           timeout=30)), autorun=False)
    x.finish(x.claim())

    assert attempts == [1]
    assert op(x, i, "parent").error.message == "Operation timed out after 30s"


# -- a finished attempt is fenced -------------------------------------------


def test_a_finished_attempt_can_no_longer_start_children_or_wait():
    kept = []
    x, i = started(one_operation(Operation("op", run=lambda ctx: kept.append(ctx))))
    (ctx,) = kept

    with pytest.raises(StaleOperation, match="Stale operation"):
        ctx.run_child(Operation("late-child", run=lambda c: 1))
    with pytest.raises(StaleOperation):
        ctx.wait_for(lambda: 1)
    assert op(x, i, "op").children == ()


def test_progress_and_logs_of_a_finished_attempt_are_ignored():
    kept = []

    def run(ctx):
        kept.append(ctx)
        ctx.log("in time")

    x, i = started(one_operation(Operation("op", run=run)))

    kept[0].log("too late")
    kept[0].progress(9, 9)
    assert kept[0].logs == ["in time"]
    assert kept[0].last_progress is None
    assert op(x, i, "op").logs == ("in time",)


def test_a_step_blocked_by_validate_goes_on_with_its_work_once_validate_passes():
    calls = Calls()
    answers = iter(["Not yet", None])
    wf = chain(Step("work", validate=lambda ctx: next(answers),
                                    operations=[Operation("first", run=calls.run("first")),
                                                Operation("second", run=calls.run("second"))]))
    x, i = started(wf, autorun=False)
    token = x.claim()

    assert not x.validate(i).moved  # blocks while "first" runs
    x.finish(token)
    assert x.pending == []  # blocked: the next operation waits
    assert x.validate(i).moved
    x.run_pending()

    assert calls == ["first", "second"]
    assert op(x, i, "second").status == "succeeded"
    assert x.snapshot(i).status == "running"


def test_an_operation_that_fails_for_good_while_validate_blocks_the_step_fails_it():
    calls = Calls()
    wf = chain(Step("work", validate=lambda ctx: "Not yet",
                    operations=[Operation("op", run=calls.failing("op", "down"))]))
    x, i = started(wf, autorun=False)
    token = x.claim()
    assert not x.validate(i).moved

    x.finish(token)

    assert (x.snapshot(i).status, x.snapshot(i).errors) == ("failed", ("down",))
    assert op(x, i, "op").status == "failed"
