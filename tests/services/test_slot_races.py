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
from collections.abc import Sequence

import pytest
from django.db import connection
from django.test import override_settings

from django_workflows import Limit, Operation, Step, Workflow, registry, services
from django_workflows.models import Attempt, AttemptStatus, WorkflowInstance
from django_workflows.runners.worker import run_attempt
from django_workflows.services.slots import ACTIVE, hand_out_waiting
from tests import dbutil
from tests.services.test_slots import HOLDING, HoldingRunner

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]

ROUNDS = 6
PARTNER_WAIT = 2.0  # how long a call waits for a second one to run beside it


class ThreadedRunner:
    """Workers running side by side: each attempt handed out runs at once, in a thread
    of its own. (The immediate runner runs what a thread's release hands out in that
    thread, one after another, so two slots of a key hardly ever ran together: CI,
    2026-12-07, saw one at a time.)"""

    threads: list[threading.Thread] = []

    def enqueue(self, tokens: Sequence[str]) -> None:
        for token in tokens:
            thread = threading.Thread(target=self._run, args=(token,), daemon=True)
            ThreadedRunner.threads.append(thread)
            thread.start()

    @staticmethod
    def _run(token: str) -> None:
        try:
            run_attempt(token, heartbeat_thread=False)
        finally:
            connection.close()

    @classmethod
    def join_all(cls, timeout: float) -> None:
        """Until every attempt's thread, the ones they started too, has ended."""
        deadline = time.monotonic() + timeout
        while any(thread.is_alive() for thread in cls.threads):
            assert time.monotonic() < deadline, "an attempt never finished"
            next(t for t in cls.threads if t.is_alive()).join(0.1)


THREADED = override_settings(DJANGO_WORKFLOWS={
    "RUNNER": "tests.services.test_slot_races.ThreadedRunner"})


class Running:
    """How many calls run at once in this process, per key, and the most there ever were.

    A call waits a moment for a second one of its key to run beside it: where the limit
    lets two run, two do, however slow the machine, and a third, were one let in, is seen.
    """

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.now: Counter[str] = Counter()
        self.most: Counter[str] = Counter()

    def call(self, ctx) -> dict:
        key = ctx.state["key"]
        with self.changed:
            self.now[key] += 1
            self.most[key] = max(self.most[key], self.now[key])
            self.changed.notify_all()
            self.changed.wait_for(lambda: self.now[key] >= 2, timeout=PARTNER_WAIT)
        time.sleep(0.02)
        with self.changed:
            self.now[key] -= 1
        return {}


running = Running()


@pytest.fixture(autouse=True)
def workflows():
    HoldingRunner.held.clear()
    ThreadedRunner.threads.clear()
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

    with THREADED:  # the settings of every thread
        results = dbutil.at_once(*[lambda t=t: orders(t) for t in range(6)], timeout=60)
        ThreadedRunner.join_all(timeout=120)

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
            results = dbutil.at_once(lambda k=key: hand_out_waiting([k]),
                                     lambda k=key: hand_out_waiting([k]))

        assert not any(isinstance(r, Exception) for r in results), results
        assert sorted(len(handed) for handed in results) == [0, 1]
        assert Attempt.objects.filter(limit_key=key, status__in=ACTIVE).count() == 1
        (handed,) = [h for h in results if h]
        assert handed == [Attempt.objects.get(instance=instances[1]).token]  # the oldest
