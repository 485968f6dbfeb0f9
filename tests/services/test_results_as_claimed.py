"""A worker's result on the instance as its claim read it (``finish_claimed``).

On PostgreSQL the result is written in one statement if the instance did not change
since the claim and the result runs no user code and writes nothing else;
otherwise, and on the other databases, under the instance's lock as any command.
Either way the result counts once, nothing another command did is lost, and the
hooks run once, under the lock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import override_settings

from django_workflows import Operation, Step, Transition, Workflow, registry, services
from django_workflows.engine import AttemptOutcome
from django_workflows.models import Attempt, WorkflowEvent, WorkflowInstance
from tests.dbutil import instance_locked_elsewhere
from tests.services.test_background import HOLDING, HoldingRunner
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db(transaction=True)

entered: list[bool] = []  # each call of the last step's enter hook: in a transaction?
made: list[bool] = []  # each call of the initial state's factory: in a transaction?


def enter_last(ctx) -> None:
    entered.append(connection.in_atomic_block)
    Note.objects.create(text="entered")


def initial_state() -> dict:
    made.append(connection.in_atomic_block)
    return {"fresh": True}


@pytest.fixture(autouse=True)
def workflows() -> Iterator[None]:
    """``two-operations``: an operation, another, then a step with an enter hook."""
    definition = Workflow(id="two-operations", steps=[
        Step("first", advance="auto", operations=[Operation("one", run=lambda ctx: 1)]),
        Step("second", advance="auto", operations=[Operation("two", run=lambda ctx: 2)]),
        Step("last", enter=enter_last)],
        transitions=[Transition("first", "second"), Transition("second", "last")])
    registry.register(definition, origin=__name__)
    undone = Workflow(id="undone", initial=initial_state, steps=[
        Step("work", advance="auto",
             operations=[Operation("do", run=lambda ctx: 1, rollback=lambda result, ctx: None)]),
        Step("done")], transitions=[Transition("work", "done")])
    registry.register(undone, origin=__name__)
    made.clear()
    entered.clear()
    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING}):
        yield
    registry.unregister(definition.id)
    registry.unregister(undone.id)


def claimed_at(step_index: int = 0):
    """A ``two-operations`` instance and the claim of the operation of its step
    ``step_index`` (the earlier ones finished)."""
    instance = services.create("two-operations", start=True)
    for _ in range(step_index):
        finish(services.claim_attempt(HoldingRunner.held.pop(), worker="w"))
    return instance, services.claim_attempt(HoldingRunner.held.pop(), worker="w")


def finish(claimed) -> bool:
    return services.finish_claimed(claimed, AttemptOutcome(ok=True, value="done"))


def row_of(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def events_are_numbered_once(instance) -> None:
    row = row_of(instance)
    sequences = list(WorkflowEvent.objects.filter(instance=row).order_by("sequence")
                     .values_list("sequence", flat=True))
    assert sequences == list(range(1, row.last_event + 1))


def test_a_result_hands_out_the_next_step_work():
    instance, claimed = claimed_at(0)

    assert finish(claimed)

    row = row_of(instance)
    assert row.current_step == "second"
    (token,) = HoldingRunner.held  # the next operation's attempt, handed to the runner
    assert Attempt.objects.get(token=token).status == "queued"
    events_are_numbered_once(instance)


def test_a_result_on_an_instance_changed_since_the_claim_keeps_the_change():
    instance, claimed = claimed_at(0)
    services.update_state(instance.pk, {"edited": True})  # while the operation runs

    assert finish(claimed)

    row = row_of(instance)
    assert (row.state, row.current_step) == ({"edited": True}, "second")
    assert row.revision == claimed.row.revision + 2
    assert [op["status"] for op in row.operations] == ["succeeded", "queued"]
    events_are_numbered_once(instance)


def test_a_result_that_runs_a_hook_runs_it_once_under_the_lock():
    instance, claimed = claimed_at(1)

    assert finish(claimed)

    assert row_of(instance).current_step == "last"
    assert entered == [True]  # once, in the command's transaction
    assert list(Note.objects.values_list("text", flat=True)) == ["entered"]
    events_are_numbered_once(instance)


def test_a_result_given_twice_counts_once():
    instance, claimed = claimed_at(0)
    assert finish(claimed)
    once = row_of(instance)

    assert not finish(claimed)  # stale: the instance is no longer what the claim read

    row = row_of(instance)
    assert (row.revision, row.last_event) == (once.revision, once.last_event)
    assert [op["status"] for op in row.operations] == ["succeeded", "queued"]
    events_are_numbered_once(instance)


@pytest.mark.real_locks
def test_a_result_while_a_command_holds_the_instance_waits_for_it():
    instance, claimed = claimed_at(0)

    with instance_locked_elsewhere(instance.pk, seconds=0.5) as holder:
        assert finish(claimed)
        done = time.monotonic()

    assert holder.released_at is not None and done >= holder.released_at  # after it let go
    assert row_of(instance).current_step == "second"
    events_are_numbered_once(instance)


def test_the_initial_state_of_a_finished_rollback_is_made_under_the_lock():
    """A rollback ends with the initial state: a factory is user code, and runs under the
    lock like a hook, though the compensation's result writes nothing but the instance."""
    instance = services.create("undone", start=True)
    finish(services.claim_attempt(HoldingRunner.held.pop(), worker="w"))
    services.rollback(instance.pk)
    made.clear()

    assert finish(services.claim_attempt(HoldingRunner.held.pop(), worker="w"))

    row = row_of(instance)
    assert (row.status, row.state) == ("idle", {"fresh": True})
    assert made == [True]
    events_are_numbered_once(instance)
