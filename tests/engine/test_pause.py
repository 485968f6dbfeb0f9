"""pause and resume: a paused instance hands out no new work and moves no step on; what
comes back meanwhile is held and applied on resume, never lost nor applied twice."""

from __future__ import annotations

import pytest

from django_workflows.engine import (
    AttemptFinished,
    AttemptOutcome,
    Branch,
    Operation,
    Signal,
    Step,
    Timer,
    Workflow,
    applies,
)
from django_workflows.testing.local import LocalExecutor

from .helpers_work import chain, fails_first, op, pending_token, started, types


def two_operations(**step: object) -> Workflow:
    return chain(Step("work", advance="auto", operations=[
        Operation("first", run=lambda ctx: "one"), Operation("second", run=lambda ctx: "two")],
        **step), Step("done"))


def paused_with_claimed_work(definition: Workflow) -> tuple[LocalExecutor, str, str]:
    """A started instance whose first attempt a worker claimed, then paused."""
    x, instance = started(definition, autorun=False)
    token = x.claim()
    assert token is not None
    assert x.pause(instance, reason="provider outage").moved
    return x, instance, token


def test_pause_keeps_the_status_to_resume_to_with_when_who_and_why():
    x, instance = started(two_operations(), autorun=False)
    x.actor = "7"

    outcome = x.pause(instance, reason="provider outage")

    snapshot = x.snapshot(instance)
    assert outcome.moved and snapshot.status == "paused"
    assert snapshot.paused is not None
    assert (snapshot.paused.status, snapshot.paused.by, snapshot.paused.reason) == (
        "running", "7", "provider outage")
    assert snapshot.paused.at == x.clock.now()
    assert [(e.type, e.data) for e in outcome.events] == [
        ("pause", {"reason": "provider outage"})]


@pytest.mark.parametrize("command", ["start", "next", "back", "skip", "validate", "retry",
                                     "rollback", "update_state", "skip_operation"])
def test_a_paused_instance_refuses_other_commands_with_paused(command):
    x, instance, _ = paused_with_claimed_work(two_operations())

    outcome = getattr(x, command)(instance)

    assert (outcome.moved, outcome.code) == (False, "paused")
    assert "provider outage" in (outcome.message or "")


def test_a_paused_instance_refuses_rewind_with_paused():
    x, instance, _ = paused_with_claimed_work(two_operations())

    assert x.rewind(instance, "work").code == "paused"


def test_what_applies_to_a_paused_instance_is_resume_and_cancel():
    x, instance, _ = paused_with_claimed_work(two_operations())

    found = applies(x.definitions["wf"], x.snapshot(instance), x.env())

    assert {name for name, verdict in found.items() if verdict.allowed} == {"resume", "cancel"}
    assert found["pause"].code == "already_paused"
    assert found["next"].code == "paused"


@pytest.mark.parametrize(("status", "code"), [("idle", "not_started"),
                                              ("completed", "completed"),
                                              ("cancelled", "cancelled")])
def test_pause_is_refused_where_there_is_nothing_to_hold(status, code):
    x = LocalExecutor(chain(Step("only")))
    instance = x.create("wf")
    if status != "idle":
        x.start(instance)
        x.next(instance) if status == "completed" else x.cancel(instance)

    assert x.pause(instance).code == code


def test_resume_of_an_instance_not_paused_is_refused():
    x, instance = started(two_operations(), autorun=False)

    assert x.resume(instance).code == "not_paused"


def test_a_result_that_comes_while_paused_is_held_not_applied():
    x, instance, token = paused_with_claimed_work(two_operations())

    outcome = x.finish(token)

    assert outcome.moved
    assert op(x, instance, "first").status == "running"  # its result waits for resume
    assert x.snapshot(instance).operation("second") is None  # no new work handed out
    assert x.pending == []
    assert [(e.type, e.data) for e in outcome.events] == [
        ("held", {"command": "attempt_finished", "kind": "operation", "target": "first",
                  "ok": True})]


def test_resume_applies_the_held_result_and_the_step_moves_on():
    x, instance, token = paused_with_claimed_work(two_operations())
    x.finish(token)

    outcome = x.resume(instance)

    assert outcome.moved
    assert op(x, instance, "first").result == "one"
    assert [e.type for e in outcome.events][:3] == [
        "resume", "operation-succeeded", "operation-queued"]
    assert outcome.events[0].data == {"paused_at": x.clock.now(), "held": 1}
    x.run_pending()
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "done")


def test_a_result_reported_twice_while_paused_is_held_once():
    x, instance, token = paused_with_claimed_work(two_operations())
    x.finish(token)

    again = x.command(instance, AttemptFinished(token, AttemptOutcome(ok=True, value="one")))

    assert (again.moved, again.code) == (False, "stale_attempt")
    x.resume(instance)
    assert types(x, instance, prefix="operation-succeeded") == ["operation-succeeded"]


def test_a_stale_result_is_refused_while_paused_as_ever():
    x, instance, _ = paused_with_claimed_work(two_operations())

    outcome = x.command(instance, AttemptFinished("no-such-token"))

    assert (outcome.moved, outcome.code) == (False, "stale_attempt")
    assert x.snapshot(instance).paused.held == ()


def test_a_failure_with_retries_left_is_retried_only_on_resume():
    x, instance = started(one_flaky_operation(), autorun=False)
    token = x.claim()
    x.pause(instance)

    x.finish(token)

    assert x.pending == []
    x.resume(instance)
    assert [p.attempt for p in x.pending] == [2]
    assert op(x, instance, "flaky").status == "queued"


def one_flaky_operation() -> Workflow:
    return chain(Step("work", advance="auto", operations=[
        Operation("flaky", run=fails_first(1), retries=2)]), Step("done"))


def test_a_blocked_result_blocks_the_instance_on_resume():
    def blocks(ctx):
        ctx.block("Need a VAT number")

    x, instance = started(chain(Step("work", operations=[Operation("vat", run=blocks)])),
                          autorun=False)
    token = x.claim()
    x.pause(instance)
    x.finish(token)
    assert x.snapshot(instance).status == "paused"

    x.resume(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("blocked", ("Need a VAT number",))


def test_a_step_timeout_that_falls_due_while_paused_fires_on_resume():
    x, instance, _ = paused_with_claimed_work(two_operations(timeout=60))

    x.advance(61)

    assert x.snapshot(instance).status == "paused"
    assert [h.command for h in x.snapshot(instance).paused.held] == ["deadline_due"]
    x.resume(instance)
    snapshot = x.snapshot(instance)
    assert snapshot.status == "failed"
    assert snapshot.errors == ('Workflow step "work" timed out after 60s',)


def test_a_timer_due_while_paused_moves_the_step_on_right_after_resume():
    x, instance = started(chain(Step("wait", wait=Timer(after=60)), Step("after")))
    x.pause(instance)

    x.advance(120)

    assert x.snapshot(instance).current_step == "wait"
    assert x.snapshot(instance).waiting.arrived is None
    outcome = x.resume(instance)
    assert [e.type for e in outcome.events] == [
        "resume", "timer-fire", "validate", "step-leave", "step-enter"]
    assert (x.snapshot(instance).status, x.snapshot(instance).current_step) == (
        "running", "after")


def test_a_retry_delay_that_ends_while_paused_queues_the_attempt_on_resume():
    x, instance = started(chain(Step("work", advance="auto", operations=[
        Operation("flaky", run=fails_first(1), retries=1, retry_delay=30)]), Step("done")))
    assert op(x, instance, "flaky").status == "waiting"
    x.pause(instance)

    x.advance(60)

    assert (op(x, instance, "flaky").status, x.pending) == ("waiting", [])
    x.resume(instance)
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "done")


def test_a_signal_delivered_while_paused_is_held_and_taken_on_resume():
    x, instance = started(chain(Step("wait", wait=Signal("paid")), Step("after")))
    x.pause(instance)

    held = x.signal(instance, "paid", {"amount": 3})

    assert held.moved
    assert x.snapshot(instance).state.get("paid") is None
    x.resume(instance)
    snapshot = x.snapshot(instance)
    assert (snapshot.current_step, snapshot.state["paid"]) == ("after", {"amount": 3})


def test_a_signal_the_step_does_not_wait_for_is_refused_while_paused_as_ever():
    x, instance = started(chain(Step("wait", wait=Signal("paid")), Step("after")))
    x.pause(instance)

    assert x.signal(instance, "refunded").code == "not_waiting"


def test_an_interruption_while_paused_fails_the_instance_on_resume():
    x, instance, token = paused_with_claimed_work(two_operations())

    assert x.interrupt(token).moved

    assert x.snapshot(instance).status == "paused"
    x.resume(instance)
    assert x.snapshot(instance).status == "failed"


def test_cancel_ends_a_pause_and_records_what_workers_reported_meanwhile():
    x, instance, token = paused_with_claimed_work(two_operations())
    x.finish(token)

    outcome = x.cancel(instance)

    snapshot = x.snapshot(instance)
    assert outcome.moved
    assert (snapshot.status, snapshot.paused, snapshot.stopping) == ("cancelled", None, ())
    assert (op(x, instance, "first").status, op(x, instance, "first").result) == (
        "succeeded", "one")
    assert x.pending == []


def test_a_rollback_after_cancel_undoes_what_finished_while_paused_with_its_result():
    undone = []
    definition = chain(Step("work", operations=[Operation(
        "charge", run=lambda ctx: "ch_1", rollback=lambda result, ctx: undone.append(result))]))
    x, instance, token = paused_with_claimed_work(definition)
    x.finish(token)
    x.cancel(instance)

    x.rollback(instance)
    x.run_pending()

    assert undone == ["ch_1"]
    assert x.snapshot(instance).status == "idle"


def test_cancel_of_a_paused_instance_whose_attempt_still_runs_tells_it_to_stop():
    x, instance, token = paused_with_claimed_work(two_operations())

    x.cancel(instance)

    assert [s.token for s in x.snapshot(instance).stopping] == [token]
    assert x.live[token].stop_reason == "Cancelled"


def test_branches_that_finish_while_paused_join_on_resume():
    definition = chain(Step("fan", advance="auto", parallel=[
        Branch("a", run=lambda ctx: None), Branch("b", run=lambda ctx: None)]), Step("done"))
    x, instance = started(definition, autorun=False)
    tokens = [x.claim(), x.claim()]
    x.pause(instance)
    for token in tokens:
        x.finish(token)
    assert {b.status for b in x.snapshot(instance).parallel} == {"running"}

    x.resume(instance)

    assert x.snapshot(instance).current_step == "done"


# -- a tree pauses and resumes as one ------------------------------------------------------


def parent_of(child: Workflow) -> Workflow:
    return chain(Step("outer", nested=child, advance="auto"), Step("after"),
                 workflow_id="parent")


def test_pausing_a_parent_pauses_its_running_child():
    child = chain(Step("inner", advance="auto", operations=[Operation("job", run=lambda c: 1)]),
                  workflow_id="child")
    x, instance = started(parent_of(child), child, autorun=False)

    x.pause(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.nested.status) == ("paused", "paused")
    assert snapshot.nested.paused.status == "running"


def test_a_childs_result_held_while_paused_completes_it_and_moves_the_parent_on_resume():
    child = chain(Step("inner", advance="auto", operations=[Operation("job", run=lambda c: 1)]),
                  workflow_id="child")
    x, instance = started(parent_of(child), child, autorun=False)
    token = pending_token(x)
    x.claim(token)
    x.pause(instance)
    x.finish(token)
    assert x.snapshot(instance).nested.status == "paused"

    x.resume(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "after")
    assert snapshot.nested.status == "completed"


@pytest.mark.parametrize("command", ["pause", "resume"])
def test_a_nested_child_is_paused_and_resumed_with_its_parent_only(command):
    child = chain(Step("inner"), workflow_id="child")
    x, instance = started(parent_of(child), child)
    child_id = x.snapshot(instance).nested.id
    if command == "resume":
        x.pause(instance)

    outcome = getattr(x, command)(child_id)

    assert (outcome.moved, outcome.code) == (False, "nested")


def test_a_paused_child_refuses_commands_given_to_it():
    child = chain(Step("inner"), Step("second"), workflow_id="child")
    x, instance = started(parent_of(child), child)
    x.pause(instance)

    assert x.next(x.snapshot(instance).nested.id).code == "paused"


def test_cancel_of_a_paused_parent_cancels_its_paused_child():
    child = chain(Step("inner"), workflow_id="child")
    x, instance = started(parent_of(child), child)
    x.pause(instance)

    x.cancel(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.nested.status, snapshot.nested.paused) == (
        "cancelled", "cancelled", None)


def test_pause_and_resume_round_trip_through_json():
    from django_workflows.engine import from_json, to_json

    x, instance, token = paused_with_claimed_work(two_operations(timeout=60))
    x.finish(token)
    x.advance(61)
    snapshot = x.snapshot(instance)

    assert from_json(to_json(snapshot)) == snapshot
