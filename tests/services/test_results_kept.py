"""A worker's result is never dropped (issue 36, part 4): when its instance stays locked, the
result is kept on the attempt's row first, tried again, and the sweep applies what is left
over; the work is not run a second time. And a slot is given on by the attempt's own key
(part 5): whatever the definition says now, and never to a paused instance."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from django_workflows import Limit, Operation, Step, Transition, Workflow, registry, services
from django_workflows.models import Attempt, AttemptStatus, WorkflowInstance
from django_workflows.runners.worker import run_attempt
from tests.dbutil import instance_locked_elsewhere
from tests.services.test_background import HOLDING, HoldingRunner

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = "tests.services.test_results_kept"
charged: list[str] = []  # each run of the charge: work that must not run twice


def charge(ctx) -> dict:
    charged.append(ctx.instance_id)
    return {"charge": f"ch_{len(charged)}"}


@pytest.fixture
def charging() -> Iterator[Workflow]:
    definition = Workflow(id="charging", steps=[
        Step("pay", advance="auto", operations=[Operation("charge", run=charge)]),
        Step("ship")], transitions=[Transition("pay", "ship")])
    registry.register(definition, origin=ORIGIN)
    charged.clear()
    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING, "LOCK_TIMEOUT": 0.3}):
        yield definition
    registry.unregister(definition.id)


def row(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


@pytest.mark.real_locks
def test_a_result_whose_instance_stays_locked_is_kept_and_the_sweep_applies_it(charging):
    instance = services.create("charging", start=True)
    (token,) = HoldingRunner.held

    with instance_locked_elsewhere(instance.pk):
        assert run_attempt(token)  # the worker ran it; its report found the row locked
    attempt = Attempt.objects.get(token=token)
    assert attempt.status == AttemptStatus.REPORTED
    assert attempt.result["value"] == {"charge": "ch_1"}

    services.sweep(now=timezone.now() + timedelta(minutes=5))

    found = row(instance)
    assert (found.current_step, found.operations[0]["result"]) == ("ship", {"charge": "ch_1"})
    assert charged == [str(instance.pk)]  # run once, never again
    attempt.refresh_from_db()
    assert (attempt.status, attempt.result) == (AttemptStatus.FINISHED, None)


@pytest.mark.real_locks
def test_a_kept_result_is_applied_once_whoever_applies_it(charging):
    instance = services.create("charging", start=True)
    (token,) = HoldingRunner.held
    with instance_locked_elsewhere(instance.pk):
        run_attempt(token)

    later = timezone.now() + timedelta(minutes=5)
    services.sweep(now=later)
    services.sweep(now=later)

    found = row(instance)
    assert found.current_step == "ship"
    assert [e.type for e in found.events.all()].count("operation-succeeded") == 1
    assert Attempt.objects.get(token=token).status == AttemptStatus.FINISHED


def one_at_a_time(limit: Limit | None) -> Workflow:
    operation = Operation("op", run=lambda ctx: "done", concurrency=limit)
    return Workflow(id="limited", steps=[Step("work", advance="auto", operations=[operation])])


@pytest.fixture
def limited() -> Iterator[None]:
    """A workflow whose operation runs one at a time (``Limit("one", max=1)``)."""
    registry.register(one_at_a_time(Limit("one", max=1)), origin=ORIGIN)
    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING}):
        yield
    registry.unregister("limited")


def test_a_slot_is_given_on_by_the_attempt_s_own_key_after_the_definition_changed(limited):
    first = services.create("limited", start=True)
    services.create("limited", start=True)
    assert len(HoldingRunner.held) == 1  # the second waits for the slot
    registry.unregister("limited")  # a deploy drops the limit while the first runs
    registry.register(one_at_a_time(None), origin=ORIGIN)

    run_attempt(HoldingRunner.held[0])

    assert len(HoldingRunner.held) == 2  # its slot went to the second at once
    assert row(first).status == "completed"


def test_a_paused_instance_s_waiting_attempt_does_not_start_when_a_slot_frees(limited):
    first = services.create("limited", start=True)
    second = services.create("limited", start=True)
    services.pause(second)

    run_attempt(HoldingRunner.held[0])  # the slot frees: the second is paused

    assert len(HoldingRunner.held) == 1
    assert Attempt.objects.get(instance=second).status == AttemptStatus.WAITING

    services.resume(second)  # now it may start

    assert len(HoldingRunner.held) == 2
    assert row(first).status == "completed"
