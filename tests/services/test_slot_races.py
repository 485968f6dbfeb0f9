"""Limits per key in races, with real threads on a database with real row locks
(PostgreSQL, MariaDB): never more attempts of a key queued or running than its ``max``,
and no waiting attempt forgotten, however hand-outs and releases meet.

Each round starts its sides at a barrier (``dbutil.at_once``), so they meet at the key's
row lock; every join has a timeout, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.test import override_settings

from django_workflows import Limit, Operation, Step, Workflow, registry, services
from django_workflows.models import Attempt, AttemptStatus, WorkflowInstance
from django_workflows.services.slots import ACTIVE, release
from tests import dbutil
from tests.services.test_slots import HOLDING, HoldingRunner

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]

ROUNDS = 6
IMMEDIATE = override_settings(DJANGO_WORKFLOWS={
    "RUNNER": "django_workflows.runners.immediate.Runner"})


class Running:
    """How many calls run at once in this process, per key, and the most there ever were."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.most: Counter[str] = Counter()

    def call(self, ctx) -> dict:
        key = ctx.state["key"]
        with self.lock:
            self.now[key] += 1
            self.most[key] = max(self.most[key], self.now[key])
        time.sleep(0.02)
        with self.lock:
            self.now[key] -= 1
        return {}


running = Running()


@pytest.fixture(autouse=True)
def workflows():
    HoldingRunner.held.clear()
    running.most.clear()
    definitions = [
        Workflow(id="race-two", steps=[Step("call", operations=[Operation(
            "call", run=running.call, concurrency=Limit(key=lambda ctx: ctx.state["key"],
                                                        max=2))])]),
        Workflow(id="race-one", steps=[Step("call", operations=[Operation(
            "call", run=lambda ctx: {}, concurrency=Limit(key=lambda ctx: ctx.state["key"],
                                                          max=1))])]),
    ]
    for definition in definitions:
        registry.register(definition, origin="tests.services.test_slot_races")
    yield
    for definition in definitions:
        registry.unregister(definition.id)
    HoldingRunner.held.clear()


def test_threads_handing_out_and_finishing_one_key_never_run_more_than_its_max():
    def orders(thread: int) -> list[WorkflowInstance]:
        return [services.create("race-two", state={"key": "hot", "n": thread * 10 + n},
                                start=True) for n in range(4)]

    with IMMEDIATE:  # the settings of every thread
        results = dbutil.at_once(*[lambda t=t: orders(t) for t in range(6)], timeout=60)

    assert not any(isinstance(r, Exception) for r in results), results
    assert running.most["hot"] == 2
    rows = Attempt.objects.filter(limit_key="hot")
    # Every one ran, each once, and none was left waiting: no release was lost.
    assert Counter(rows.values_list("status", flat=True)) == {AttemptStatus.FINISHED: 24}
    assert all(op["status"] == "succeeded" for row in WorkflowInstance.objects.all()
               for op in row.operations)


def test_two_hand_outs_at_once_take_the_last_slot_once():
    for round_ in range(ROUNDS):
        key = f"one-{round_}"

        def order(key: str = key) -> WorkflowInstance:
            return services.create("race-one", state={"key": key}, start=True)

        with HOLDING:
            results = dbutil.at_once(order, order)

        assert not any(isinstance(r, Exception) for r in results), results
        statuses = Counter(Attempt.objects.filter(limit_key=key)
                           .values_list("status", flat=True))
        assert statuses == {AttemptStatus.QUEUED: 1, AttemptStatus.WAITING: 1}


def test_two_releases_at_once_give_a_freed_slot_to_one_waiting_attempt():
    for round_ in range(ROUNDS):
        key = f"freed-{round_}"
        with HOLDING:
            instances = [services.create("race-one", state={"key": key}, start=True)
                         for _ in range(3)]
        first = Attempt.objects.get(instance=instances[0])
        assert first.status == AttemptStatus.QUEUED
        # Its worker finished it (the finish's own release is what the race stands for).
        Attempt.objects.filter(pk=first.pk).update(status=AttemptStatus.FINISHED)

        with HOLDING:
            results = dbutil.at_once(lambda k=key: release([k]), lambda k=key: release([k]))

        assert not any(isinstance(r, Exception) for r in results), results
        assert sorted(len(handed) for handed in results) == [0, 1]
        assert Attempt.objects.filter(limit_key=key, status__in=ACTIVE).count() == 1
        (handed,) = [h for h in results if h]
        assert handed == [Attempt.objects.get(instance=instances[1]).token]  # the oldest
