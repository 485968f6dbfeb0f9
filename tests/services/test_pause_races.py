"""pause and resume in races with a worker's result, with real threads on a database with
real row locks (PostgreSQL, MariaDB): the result is recorded once, applied once (on resume
when it came while paused), never lost.

Each round starts both sides at a barrier, so they meet at the row lock; every join has
a timeout, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from django.test import override_settings

from django_workflows import Operation, Step, Transition, Workflow, registry, services
from django_workflows.engine import AttemptOutcome
from django_workflows.models import Attempt, AttemptStatus, WorkflowEvent, WorkflowInstance
from tests import dbutil
from tests.services.test_background import HOLDING, HoldingRunner

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]

ROUNDS = 8
CHARGED = {"charge": "ch_1"}


@pytest.fixture(autouse=True)
def workflows() -> Iterator[None]:
    definition = Workflow(id="race-order", steps=[
        Step("pay", advance="auto", operations=[Operation("charge", run=lambda ctx: CHARGED)]),
        Step("ship", advance="auto", operations=[Operation("label", run=lambda ctx: 1)]),
        Step("done")],
        transitions=[Transition("pay", "ship"), Transition("ship", "done")])
    registry.register(definition, origin=__name__)
    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING}):
        yield
    registry.unregister(definition.id)


def claimed_order():
    instance = services.create("race-order", start=True)
    token = next(t for t in HoldingRunner.held
                 if Attempt.objects.filter(token=t, instance=instance).exists())
    claimed = services.claim_attempt(token, worker="w")
    assert claimed is not None
    return instance, claimed


def kinds(instance) -> list[str]:
    return list(WorkflowEvent.objects.filter(instance_id=instance.pk).order_by("sequence")
                .values_list("type", flat=True))


def applied_once(instance, claimed, ended=(AttemptStatus.FINISHED,)) -> None:
    """The result counted once, the step moved on once, nothing is left held."""
    row = WorkflowInstance.objects.get(pk=instance.pk)
    events = kinds(instance)
    assert (row.status, row.current_step, row.snap.paused) == ("running", "ship", None)
    assert row.snap.operation("charge").result == CHARGED
    assert events.count("operation-succeeded") == 1
    assert events.count("step-enter") == 2  # pay, then ship: once
    assert Attempt.objects.get(token=claimed.work.token).status in ended
    assert Attempt.objects.filter(instance=instance, status=AttemptStatus.QUEUED).count() == 1


def test_a_result_against_a_pause_is_applied_before_it_or_held_and_applied_on_resume():
    outcomes: Counter[str] = Counter()
    for _ in range(ROUNDS):
        instance, claimed = claimed_order()

        finished, paused = dbutil.at_once(
            lambda c=claimed: services.finish_claimed(c, AttemptOutcome(ok=True, value=CHARGED)),
            lambda i=instance: services.pause(i))

        assert finished is True, finished
        assert not isinstance(paused, Exception), paused
        events = kinds(instance)
        row = WorkflowInstance.objects.get(pk=instance.pk)
        assert row.status == "paused"
        if "held" in events:  # paused first: the result waits for resume
            assert events.index("pause") < events.index("held")
            assert row.current_step == "pay" and "operation-succeeded" not in events
            outcomes["held"] += 1
        else:  # the result first: the step moved on, then it paused
            assert events.index("operation-succeeded") < events.index("pause")
            outcomes["applied"] += 1
        services.resume(instance)
        applied_once(instance, claimed)
    print(dict(outcomes))
    assert sum(outcomes.values()) == ROUNDS


def test_a_result_against_a_resume_is_held_then_applied_or_applied_after_it():
    outcomes: Counter[str] = Counter()
    for _ in range(ROUNDS):
        instance, claimed = claimed_order()
        services.pause(instance)

        finished, resumed = dbutil.at_once(
            lambda c=claimed: services.finish_claimed(c, AttemptOutcome(ok=True, value=CHARGED)),
            lambda i=instance: services.resume(i))

        assert finished is True, finished
        assert not isinstance(resumed, Exception), resumed
        events = kinds(instance)
        outcomes["held" if "held" in events else "after resume"] += 1
        applied_once(instance, claimed)
    print(dict(outcomes))
    assert sum(outcomes.values()) == ROUNDS


def test_a_result_reported_twice_while_paused_is_held_once():
    for _ in range(ROUNDS // 2):
        instance, claimed = claimed_order()
        services.pause(instance)

        first, second = dbutil.at_once(*[
            lambda c=claimed: services.finish_claimed(c, AttemptOutcome(ok=True, value=CHARGED))
            for _ in range(2)])

        assert sorted([first, second]) == [False, True]  # the repeat is dropped as stale
        row = WorkflowInstance.objects.get(pk=instance.pk)
        assert len(row.snap.paused.held) == 1
        services.resume(instance)
        # The repeat, refused, marks the attempt's row dropped, as a repeat does unpaused.
        applied_once(instance, claimed, ended=(AttemptStatus.FINISHED, AttemptStatus.DROPPED))
