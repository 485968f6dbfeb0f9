"""A command that calls no user code, written in one statement (PostgreSQL).

The service reads the row without a lock, applies the command to it, and writes it
with one statement that locks the row and writes only if it is still at the revision
read and nobody else holds it (``write_if_unchanged``). Otherwise, having written
nothing, it gives the command under the lock as always. These tests hold what must
not change: no step lost or applied twice under threads, hooks called once and under
the lock, and a command that a change in between makes wrong refused on the row as
the lock finds it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.exceptions import Busy, WorkflowNotMoved
from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.services.sql import statements
from tests import dbutil

pytestmark = pytest.mark.django_db(transaction=True)

THREADS, MOVES = 4, 8  # long-manual has 40 steps: 32 moves never finish it


@pytest.mark.real_locks
def test_threads_moving_one_instance_lose_no_step_and_apply_none_twice():
    instance = services.create("long-manual", start=True)

    def mover() -> int:
        moved = 0
        while moved < MOVES:
            try:
                services.next(instance.pk, lock_timeout=5)
            except Busy:
                continue
            moved += 1
        return moved

    assert dbutil.at_once(*[mover] * THREADS, timeout=60) == [MOVES] * THREADS

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert row.current_step == f"s{THREADS * MOVES}"
    assert row.revision == instance.revision + THREADS * MOVES
    events = list(WorkflowEvent.objects.filter(instance=row).order_by("sequence"))
    assert [event.sequence for event in events] == list(range(1, row.last_event + 1))
    entered = [event.step for event in events if event.type == "step-enter"]
    assert entered == [f"s{number}" for number in range(THREADS * MOVES + 1)]


class LockProbe:
    """An ``enter`` hook that counts its calls and asks, from another connection, whether
    the instance's row is locked while it runs."""

    def __init__(self) -> None:
        self.calls = 0
        self.row_was_locked: list[bool] = []

    def __call__(self, ctx: Any) -> None:
        self.calls += 1
        self.row_was_locked.append(locked_elsewhere(ctx.instance_id))


def locked_elsewhere(instance_id: str) -> bool:
    """Whether another session finds the row locked (``FOR UPDATE NOWAIT`` fails)."""
    found: list[bool] = []

    def probe() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("SELECT id FROM django_workflows_workflowinstance "
                               "WHERE id = %s FOR UPDATE NOWAIT", [instance_id])
                cursor.execute("ROLLBACK")
            found.append(False)
        except OperationalError:
            found.append(True)
        finally:
            connection.close()

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(30)
    assert found, "the probe did not finish"
    return found[0]


@pytest.fixture
def probed() -> Iterator[LockProbe]:
    probe = LockProbe()
    definition = Workflow(id="probed-enter", steps=[Step("first"), Step("second", enter=probe)],
                          transitions=[Transition("first", "second")])
    registry.register(definition, origin=__name__)
    yield probe
    registry.unregister(definition.id)


@pytest.mark.real_locks
def test_a_hook_runs_once_and_under_the_lock(probed):
    for _ in range(2):
        instance = services.create("probed-enter", start=True)
        assert services.next(instance).current_step == "second"

    assert probed.calls == 2 and probed.row_was_locked == [True, True]


@pytest.mark.postgres
def test_a_command_the_row_moved_under_is_judged_again_on_the_locked_row(monkeypatch):
    """Cancelled between the read and the write, the instance is not moved: the one
    statement finds another revision, and under the lock ``next`` is refused."""
    instance = services.create("long-manual", start=True)
    started = instance.revision
    sql = statements()
    read_row = sql.row

    def read_then_cancelled(pk: Any) -> WorkflowInstance | None:
        monkeypatch.setattr(sql, "row", read_row)  # the cancel reads as ever
        row = read_row(pk)
        services.cancel(pk, reason="in between")
        return row

    monkeypatch.setattr(sql, "row", read_then_cancelled)
    with pytest.raises(WorkflowNotMoved) as refused:
        services.next(instance)

    assert refused.value.code == "cancelled"
    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.status, row.current_step, row.revision) == (
        "cancelled", "s0", started + 1)
    assert not WorkflowEvent.objects.filter(instance=row, type="step-leave").exists()


@pytest.mark.postgres
def test_after_a_lost_race_the_instances_next_commands_go_straight_to_the_lock(monkeypatch):
    """On a contended instance the unlocked read and the engine's work would be thrown
    away: for a second after its one-statement write loses, commands lock it first."""
    instance = services.create("long-manual", start=True)
    sql = statements()
    read_row = sql.row

    def read_then_moved(pk: Any) -> WorkflowInstance | None:
        monkeypatch.setattr(sql, "row", read_row)
        row = read_row(pk)
        services.next(pk)  # another writer gets there first
        return row

    monkeypatch.setattr(sql, "row", read_then_moved)
    assert services.next(instance).current_step == "s2"  # lost the race, then locked
    ran: list[str] = []

    def record(execute: Any, sql_text: str, params: Any, many: bool, context: Any) -> Any:
        ran.append(dbutil.spelled_out(sql_text, params) or "")
        return execute(sql_text, params, many, context)

    with connection.execute_wrapper(record):
        assert services.next(instance).current_step == "s3"

    assert "FOR UPDATE" in ran[0] and "SKIP LOCKED" not in ran[0]
    assert not any("SKIP LOCKED" in sql_text for sql_text in ran)
