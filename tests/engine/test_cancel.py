"""cancel: the exit guards may refuse; otherwise all work stops and the instance is cancelled."""

from __future__ import annotations

import pytest

from django_workflows.engine import Branch, Operation, Step, StopAttempt, Workflow

from .helpers_navigation import Calls, chain, created, kinds, raises, started, trail, wizard


def test_cancel_cancels_a_running_instance():
    x, instance = started(wizard("account", "plan"))
    x.clock.advance(10)

    outcome = x.cancel(instance)

    snapshot = x.snapshot(instance)
    assert outcome.moved
    assert snapshot.status == "cancelled"
    assert snapshot.completed_at == x.clock.now()


def test_cancel_emits_cancel_with_the_current_step():
    x, instance = started(wizard("account", "plan"))

    outcome = x.cancel(instance)

    assert trail(outcome.events) == [("cancel", "account")]


def test_cancel_keeps_the_current_step_and_the_state():
    x, instance = started(wizard("account", "plan", initial={"email": "a@example.com"}))

    x.cancel(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "account"
    assert snapshot.state == {"email": "a@example.com"}


def test_an_instance_that_never_started_can_be_cancelled():
    x, instance = created(wizard("account"))

    outcome = x.cancel(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "cancelled"
    assert trail(outcome.events) == [("cancel", None)]


def test_a_blocked_instance_can_be_cancelled():
    x, instance = started(chain(Step("account", validate=lambda ctx: "Email is required")))
    x.next(instance)

    outcome = x.cancel(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "cancelled"


def test_a_failed_instance_can_be_cancelled():
    x, instance = started(chain(Step("account", enter=raises("boom"))))

    outcome = x.cancel(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "cancelled"


def test_a_completed_instance_cannot_be_cancelled():
    x, instance = started(wizard("account"))
    x.next(instance)

    outcome = x.cancel(instance)

    assert (outcome.moved, outcome.code) == (False, "completed")
    assert x.snapshot(instance).status == "completed"


def test_cancelling_twice_is_harmless():
    x, instance = started(wizard("account"))
    x.cancel(instance)
    before = x.snapshot(instance)
    x.clock.advance(60)

    outcome = x.cancel(instance)

    assert (outcome.moved, outcome.code) == (False, "already_cancelled")
    assert outcome.events == ()
    assert x.snapshot(instance) == before


# -- exit guards ---------------------------------------------------------------------------

def test_an_exit_guard_that_says_no_refuses_the_cancel():
    x, instance = started(wizard("account", exit_guard=lambda ctx: False))

    outcome = x.cancel(instance)

    assert (outcome.moved, outcome.code) == (False, "cancel_refused")
    assert outcome.message == 'Workflow "w" refused to be cancelled'
    assert outcome.events == ()
    assert x.snapshot(instance).status == "running"


def test_an_exit_guard_that_returns_nothing_refuses_the_cancel():
    x, instance = started(wizard("account", exit_guard=lambda ctx: None))

    outcome = x.cancel(instance)

    assert outcome.code == "cancel_refused"


def test_an_exit_guard_that_says_yes_lets_the_cancel_through():
    x, instance = started(wizard("account", exit_guard=lambda ctx: True))

    outcome = x.cancel(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "cancelled"


def test_the_exit_guard_sees_the_instance_state():
    definition = wizard("account", exit_guard=lambda ctx: not ctx.state["paid"])
    x, instance = started(definition, {"paid": True})

    outcome = x.cancel(instance)

    assert outcome.code == "cancel_refused"


def test_an_exit_guard_that_raises_refuses_the_cancel_without_failing_the_workflow():
    x, instance = started(wizard("account", exit_guard=raises("ledger is down")))

    outcome = x.cancel(instance)

    assert (outcome.moved, outcome.code) == (False, "cancel_refused")
    assert outcome.message == 'The exit guard of Workflow "w" raised: ledger is down'
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("running", ())
    assert outcome.events == ()


# -- nested children -----------------------------------------------------------------------

def parent_of(child: Workflow, **workflow) -> Workflow:
    return chain(Step("account"), Step("setup", nested=child), Step("done"), **workflow)


def test_the_exit_guard_of_a_running_child_can_refuse_the_cancel():
    child = wizard("c1", "c2", id="child", exit_guard=lambda ctx: False)
    x, instance = started(parent_of(child))
    x.next(instance)
    child_id = x.snapshot(instance).nested.id

    outcome = x.cancel(instance)

    assert (outcome.moved, outcome.code) == (False, "cancel_refused")
    assert outcome.message == 'Workflow "child" refused to be cancelled'
    assert x.snapshot(instance).status == "running"
    assert x.snapshot(child_id).status == "running"


def test_the_parents_guard_is_asked_before_the_childs():
    calls = Calls()
    child = wizard("c1", id="child", exit_guard=calls.hook("child guard", True))
    x, instance = started(parent_of(child, exit_guard=calls.hook("parent guard", False)))
    x.next(instance)

    x.cancel(instance)

    assert calls.log == ["parent guard"]


def test_the_exit_guard_of_a_completed_child_is_not_asked():
    calls = Calls()
    child = wizard("c1", id="child", exit_guard=calls.hook("child guard", False))
    x, instance = started(parent_of(child))
    x.next(instance)
    x.next(instance)
    assert x.snapshot(instance).current_step == "done"

    outcome = x.cancel(instance)

    assert outcome.moved
    assert calls.log == []


def test_a_running_child_is_cancelled_first():
    x, instance = started(parent_of(wizard("c1", "c2", id="child")))
    x.next(instance)
    child_id = x.snapshot(instance).nested.id

    outcome = x.cancel(instance)

    assert [(e.instance_id, e.type) for e in outcome.events] == [
        (child_id, "cancel"), (instance, "cancel")]
    assert x.snapshot(child_id).status == "cancelled"


# -- after a cancel ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["start", "next", "back", "skip", "validate", "retry"])
def test_commands_after_a_cancel_answer_cancelled(command):
    x, instance = started(wizard("account", "plan", "confirm"))
    x.next(instance)
    x.cancel(instance)
    before = x.snapshot(instance)

    outcome = getattr(x, command)(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")
    assert outcome.message == 'Workflow "w" was cancelled'
    assert x.snapshot(instance) == before


def test_update_state_after_a_cancel_answers_cancelled():
    x, instance = started(wizard("account"))
    x.cancel(instance)

    outcome = x.update_state(instance, {"email": "a@example.com"})

    assert outcome.code == "cancelled"


def test_rollback_after_a_cancel_is_allowed():
    calls = Calls()
    x, instance = started(chain(Step("account", compensate=calls.hook("undo account")),
                                Step("plan")))
    x.next(instance)
    x.cancel(instance)

    outcome = x.rollback(instance)

    assert outcome.moved
    assert calls.log == ["undo account"]
    assert x.snapshot(instance).status == "idle"


# -- work in flight -----------------------------------------------------------------------------

def provisioning(**step) -> Workflow:
    return chain(Step("provision", operations=[Operation("create-tenant", run=lambda ctx: 1)],
                      **step), Step("welcome"))


def test_cancel_tells_a_running_attempt_to_stop():
    x, instance = started(provisioning(), autorun=False)
    token = x.claim()

    outcome = x.cancel(instance)

    assert StopAttempt(instance, token, "Cancelled") in outcome.effects
    assert x.live[token].stop_reason == "Cancelled"


def test_an_operation_told_to_stop_by_a_cancel_ends_cancelled():
    x, instance = started(provisioning(), autorun=False)
    x.claim()

    outcome = x.cancel(instance)

    operation = x.snapshot(instance).operation("create-tenant")
    assert operation.status == "cancelled"
    assert operation.error.message == "Cancelled"
    assert kinds(outcome.events) == ["operation-cancelled", "cancel"]


def test_cancel_withdraws_an_attempt_not_yet_claimed():
    x, instance = started(provisioning(), autorun=False)
    token = x.pending[0].token

    outcome = x.cancel(instance)

    assert StopAttempt(instance, token, "Cancelled") in outcome.effects
    assert x.pending == []
    assert x.snapshot(instance).operation("create-tenant").status == "cancelled"


def test_cancel_tells_running_branches_to_stop():
    definition = chain(Step("welcome", parallel=[Branch("mail", run=lambda ctx: None),
                                                 Branch("crm", run=lambda ctx: None)]))
    x, instance = started(definition, autorun=False)
    tokens = [x.claim(), x.claim()]

    outcome = x.cancel(instance)

    assert [e.token for e in outcome.effects if isinstance(e, StopAttempt)] == tokens
    assert [b.status for b in x.snapshot(instance).parallel] == ["cancelled", "cancelled"]


def test_the_late_result_of_an_attempt_stopped_by_a_cancel_is_discarded():
    x, instance = started(provisioning(), autorun=False)
    token = x.claim()
    x.cancel(instance)

    x.finish(token)

    snapshot = x.snapshot(instance)
    assert snapshot.status == "cancelled"
    assert snapshot.operation("create-tenant").status == "cancelled"
    assert snapshot.operation("create-tenant").result is None


def test_a_cancel_stops_the_step_deadline():
    x, instance = started(provisioning(timeout=30), autorun=False)
    x.claim()

    x.cancel(instance)
    x.advance(60)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("cancelled", ())


def test_a_rollback_in_progress_can_be_cancelled():
    x, instance = started(chain(Step("account", compensate=lambda ctx: None), Step("plan")),
                          autorun=False)
    x.next(instance)
    x.rollback(instance)
    token = x.claim()

    outcome = x.cancel(instance)

    assert outcome.moved
    assert StopAttempt(instance, token, "Cancelled") in outcome.effects
    assert x.snapshot(instance).status == "cancelled"
