"""Commands racing on real threads: nothing lost, nothing doubled, no deadlock.

Every thread has its own database connection (closed when it ends) and waits
at a barrier so that the callers really start together. On PostgreSQL and
MariaDB/MySQL the row locks are real; on SQLite the one write lock (``BEGIN
IMMEDIATE``) serialises the commands. Each test runs on each of them, in their own
runs of the suite, except the ``Busy`` test, which needs a bounded wait for a row lock.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import override_settings

from django_workflows import services
from django_workflows.exceptions import Busy, StaleRevision, WorkflowNotMoved
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests import dbutil

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 16
JOIN_TIMEOUT = 60.0  # seconds for all threads of a race together: a deadlock fails the test
BUSY_RETRY_FOR = 30.0  # seconds a caller keeps retrying a command that answered Busy


@dataclass
class Race:
    """What the threads of a race returned, and what they raised unexpectedly."""

    results: list[Any] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def race(*callers: Callable[[], Any], timeout: float = JOIN_TIMEOUT) -> Race:
    """Run each caller on its own thread, all released together; wait for all of them."""
    barrier = threading.Barrier(len(callers))
    results: list[Any] = [None] * len(callers)
    errors: list[BaseException] = []

    def run(index: int, caller: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[index] = caller()
        except BaseException as error:  # recorded, and the test fails on it
            errors.append(error)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i, c), daemon=True, name=f"caller-{i}")
               for i, c in enumerate(callers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0.0))
    alive = [thread.name for thread in threads if thread.is_alive()]
    assert not alive, f"threads still running after {timeout}s (deadlock?): {alive}"
    return Race(results, errors)


def until_not_busy(command: Callable[[], Any]) -> Any:
    """Run ``command``, again while it answers Busy (a bounded number of seconds)."""
    deadline = time.monotonic() + BUSY_RETRY_FOR
    while True:
        try:
            return command()
        except Busy:
            if time.monotonic() > deadline:
                raise


def started(workflow: str) -> WorkflowInstance:
    instance = services.create(workflow, start=True)
    instance.refresh_from_db()
    return instance


def events_of(instance_id: Any) -> list[WorkflowEvent]:
    return list(WorkflowEvent.objects.filter(instance_id=instance_id).order_by("sequence"))


def assert_event_log_whole(instance: WorkflowInstance) -> list[WorkflowEvent]:
    """Events numbered 1..last_event, with no gap and no duplicate."""
    events = events_of(instance.pk)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert instance.last_event == len(events)
    return events


def assert_moved_by_nexts(instance: WorkflowInstance, nexts: int, *, before: int,
                          others: int = 0) -> None:
    """``instance`` (long-manual, started) went exactly ``nexts`` steps, one per success."""
    steps = [f"s{i}" for i in range(nexts + 1)]
    assert instance.status == "running"
    assert instance.current_step == steps[-1]
    assert instance.history == steps
    assert instance.completed_steps == steps[:-1]
    assert instance.revision == before + nexts + others
    events = assert_event_log_whole(instance)
    steps_events = [(e.type, e.step) for e in events if e.type != "state-update"]
    expected = [("start", ""), ("step-enter", "s0")]
    for i in range(nexts):
        expected += [("validate", f"s{i}"), ("step-leave", f"s{i}"), ("step-enter", f"s{i + 1}")]
    assert steps_events == expected


# -- 1. many callers of next -------------------------------------------------------------


def test_every_successful_next_moves_the_instance_exactly_one_step():
    instance = started("long-manual")
    before = instance.revision
    assert before == 2  # created at revision 1, started at 2
    assert [e.type for e in assert_event_log_whole(instance)] == ["start", "step-enter"]
    per_caller = 2  # 16 x 2 = 32 steps of 40: the instance never completes

    def caller() -> int:
        return sum(until_not_busy(lambda: services.next(instance.pk)) is not None
                   for _ in range(per_caller))

    outcome = race(*[caller] * CALLERS)

    assert outcome.errors == []
    successes = sum(outcome.results)
    assert successes == CALLERS * per_caller
    instance.refresh_from_db()
    assert_moved_by_nexts(instance, successes, before=before)
    # Each success wrote its own revision, with its three events (validate, leave, enter).
    revisions = [e.revision for e in events_of(instance.pk)][2:]
    assert revisions == [r for r in range(before + 1, before + successes + 1) for _ in "vle"]


# -- 2. the same expected revision ---------------------------------------------------------


def test_only_one_caller_with_the_same_expected_revision_moves_the_instance():
    instance = started("long-manual")
    revision = instance.revision

    def caller() -> str:
        try:
            until_not_busy(lambda: services.next(instance.pk, expected_revision=revision))
        except StaleRevision as stale:
            assert (stale.expected, stale.actual) == (revision, revision + 1)
            return "stale"
        return "moved"

    outcome = race(*[caller] * CALLERS)

    assert outcome.errors == []
    assert sorted(outcome.results) == ["moved"] + ["stale"] * (CALLERS - 1)
    instance.refresh_from_db()
    assert_moved_by_nexts(instance, 1, before=revision)


# -- 3. update_state racing next -----------------------------------------------------------


def test_update_state_racing_next_loses_no_write():
    instance = started("long-manual")
    before = instance.revision
    updaters, updates_each, movers, nexts_each = 8, 3, 8, 2

    def updater(number: int) -> list[str]:
        keys = []
        for i in range(updates_each):
            key = f"caller-{number}-{i}"
            until_not_busy(lambda key=key: services.update_state(
                instance.pk, lambda state, key=key: {**state, key: True}))
            keys.append(key)
        return keys

    def mover() -> int:
        return sum(until_not_busy(lambda: services.next(instance.pk)) is not None
                   for _ in range(nexts_each))

    callers = [lambda n=n: updater(n) for n in range(updaters)] + [mover] * movers
    random.Random(3).shuffle(callers)  # interleave the thread start order
    outcome = race(*callers)

    assert outcome.errors == []
    keys = sorted(k for r in outcome.results if isinstance(r, list) for k in r)
    nexts = sum(r for r in outcome.results if isinstance(r, int))
    assert len(keys) == updaters * updates_each and nexts == movers * nexts_each
    instance.refresh_from_db()
    assert instance.state == dict.fromkeys(keys, True)
    assert_moved_by_nexts(instance, nexts, before=before, others=len(keys))
    updates = [e for e in events_of(instance.pk) if e.type == "state-update"]
    assert len(updates) == len(keys)


# -- 4. parent and child commands racing -------------------------------------------------


def test_parent_and_child_commands_racing_never_deadlock_and_stay_consistent():
    parent = started("parent")
    services.next(parent.pk)  # intro -> check: the child starts
    parent.refresh_from_db()
    assert parent.current_step == "check"
    child_id = parent.nested_id
    assert child_id is not None
    commands = (services.next, services.back, services.validate)

    def caller(target: Any, seed: int) -> dict[str, int]:
        rnd = random.Random(seed)
        tally = {"moved": 0, "refused": 0}
        for _ in range(8):
            command = rnd.choice(commands)
            try:
                until_not_busy(lambda command=command: command(target))
            except WorkflowNotMoved:
                tally["refused"] += 1
            else:
                tally["moved"] += 1
        return tally

    callers = [lambda s=s: caller(parent.pk, s) for s in range(6)]
    callers += [lambda s=s: caller(child_id, 100 + s) for s in range(6)]
    outcome = race(*callers)

    # A deadlock (PostgreSQL's 40P01, MariaDB's 1213) or any other database error is here.
    assert outcome.errors == []
    assert sum(t["moved"] + t["refused"] for t in outcome.results) == 12 * 8
    parent.refresh_from_db()
    child = WorkflowInstance.objects.get(pk=child_id)
    assert list(WorkflowInstance.objects.filter(parent=parent.pk)) == [child]
    assert parent.nested_id == child_id
    for row in (parent, child):
        assert_event_log_whole(row)
    _assert_child_completed_before_parent_left_check(parent, child)


def _assert_child_completed_before_parent_left_check(parent: WorkflowInstance,
                                                     child: WorkflowInstance) -> None:
    """Replay both logs command by command, in the order the root's lock gave them.

    One command writes all its events with one time, the parent's before the
    child's; the parent's follow the child's, so they are replayed after them.
    """
    log = WorkflowEvent.objects.filter(instance__in=[parent, child]).order_by("pk")
    commands: dict[Any, list[WorkflowEvent]] = {}
    for event in log:
        commands.setdefault(event.created_at, []).append(event)
    child_status, completions = "running", 0
    for events in commands.values():
        for event in sorted(events, key=lambda e: e.instance_id != child.pk):
            if event.instance_id == child.pk:
                if event.type == "complete":
                    completions += 1
                    child_status = "completed"
                elif event.type == "back":
                    child_status = "running"
            elif event.type == "step-leave" and event.step == "check":
                assert child_status == "completed", (
                    "the parent left check before its child completed")
    assert completions <= 1, "the child completed more than once"
    assert (child.status == "completed") == (completions == 1)
    if "check" in parent.completed_steps:
        assert child.status == "completed"


# -- 5. Busy, and a cancel that waits ------------------------------------------------------


@pytest.mark.real_locks
def test_a_command_answers_busy_while_another_holds_the_row_and_a_cancel_waits():
    instance = started("long-manual")
    before = (instance.revision, instance.last_event, instance.current_step)
    locked, release = threading.Event(), threading.Event()

    def holder() -> float:
        with transaction.atomic():
            WorkflowInstance.objects.select_for_update().get(pk=instance.pk)
            locked.set()
            release.wait(3.0)  # the lock is held for at most 3 s
            return time.monotonic()

    def canceller() -> tuple[float, str]:
        row = services.cancel(instance.pk)  # waits for the lock (CANCEL_LOCK_TIMEOUT)
        return time.monotonic(), row.status

    holding: dict[str, Any] = {}
    threads = [threading.Thread(target=_keep, args=(holding, "holder", holder)),
               threading.Thread(target=_keep, args=(holding, "canceller", canceller))]
    threads[0].start()
    assert locked.wait(10), "the holder did not get the lock"
    try:
        with override_settings(DJANGO_WORKFLOWS={"LOCK_TIMEOUT": 0.5}):
            began = time.monotonic()
            with pytest.raises(Busy):
                services.next(instance.pk)
            waited = time.monotonic() - began
        # It waited for the lock timeout, then gave up: 0.5 s (MariaDB/MySQL: 1 s, as they
        # wait whole seconds).
        assert 0.4 <= waited < 2.0
        threads[1].start()
        # The cancel is queued behind the holder.
        assert dbutil.a_session_waits_for_a_lock(5.0), "the cancel never waited for the lock"
        assert "canceller" not in holding
    finally:
        release.set()
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
    released_at = holding["holder"]
    cancelled_at, status = holding["canceller"]
    assert status == "cancelled" and cancelled_at >= released_at

    instance.refresh_from_db()
    # The Busy next changed nothing; the cancel is the only change since.
    assert instance.status == "cancelled"
    assert instance.current_step == before[2]
    assert instance.revision == before[0] + 1
    events = assert_event_log_whole(instance)
    assert [e.type for e in events[before[1]:]] == ["cancel"]


def _keep(results: dict[str, Any], name: str, function: Callable[[], Any]) -> None:
    """Run ``function`` on this thread's own connection; keep its result (or error)."""
    try:
        results[name] = function()
    except BaseException as error:
        results[name] = error
    finally:
        connection.close()

