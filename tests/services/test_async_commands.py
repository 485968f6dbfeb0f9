"""The async twins give the sync commands: the same moves, refusals and row lock.

Each test's coroutine runs as Django runs an async view: ``async_to_sync`` keeps the
thread-sensitive database work in the test's thread (its connection, its test transaction).
The race runs each call in a context of its own, as Django's ASGI handler runs each request,
so each has its own thread and connection and the row lock decides.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import ThreadSensitiveContext, async_to_sync, sync_to_async
from django.contrib.auth.models import Group
from django.db import connections

from django_workflows import services
from django_workflows.exceptions import StaleRevision, WorkflowNotMoved
from django_workflows.models import TaskStatus, WorkflowEvent, WorkflowInstance, WorkflowTask
from tests import dbutil
from tests.factories import UserFactory
from tests.qcluster import wait_for

JOIN_TIMEOUT = 30.0  # seconds: a race still running then is a deadlock or an endless wait


def run(call: Callable[[], Awaitable[Any]]) -> Any:
    """Await ``call()`` as an async view would, from this (sync) test."""
    async def view() -> Any:
        return await call()

    return async_to_sync(view)()


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def left_steps(instance: WorkflowInstance) -> list[str]:
    return list(WorkflowEvent.objects.filter(instance=instance, type="step-leave")
                .order_by("sequence").values_list("step", flat=True))


@pytest.mark.django_db
def test_acreate_then_anext_moves_the_instance_on():
    async def scenario() -> tuple[WorkflowInstance, WorkflowInstance]:
        created = await services.acreate("long-manual", start=True)
        return created, await services.anext(created.pk, expected_revision=created.revision)

    created, moved = run(scenario)

    row = reload(created)
    assert (created.current_step, moved.current_step, row.current_step) == ("s0", "s1", "s1")
    assert row.revision == created.revision + 1 == moved.revision
    assert left_steps(row) == ["s0"]


@pytest.mark.django_db
def test_asignal_delivers_the_signal_to_the_waiting_instance():
    waiting = services.next(services.create("payment", state={"intent": "pi_1"}, start=True))

    sent = run(lambda: services.asignal("payment", "payment-confirmed", {"amount": 12},
                                        correlation="pi_1", message_id="evt_1"))

    row = reload(waiting)
    assert [instance.pk for instance in sent.taken_by] == [waiting.pk]
    assert (row.current_step, row.state["payment"]) == ("ship", {"amount": 12})
    assert WorkflowEvent.objects.get(instance=row, type="signal").data["message_id"] == "evt_1"


@pytest.mark.django_db
def test_acomplete_completes_a_task_and_the_instance_moves_on():
    owner, manager = UserFactory(username="ann"), UserFactory(username="mo")
    manager.groups.add(Group.objects.get_or_create(name="managers")[0])
    claim = services.next(services.create("approval", owner=owner, start=True), user=owner)
    manager = type(manager).objects.get(pk=manager.pk)

    run(lambda: services.acomplete(claim.pk, input={"decision": "approved"}, user=manager))

    row = reload(claim)
    task = WorkflowTask.objects.get(instance=row, step="decision")
    assert (row.current_step, task.status, task.completed_by) == ("paid", TaskStatus.DONE, manager)


@pytest.mark.django_db
def test_a_refused_twin_raises_what_the_sync_command_raises():
    idle = services.create("long-manual")
    with pytest.raises(WorkflowNotMoved) as sync_refusal:
        services.next(idle)

    with pytest.raises(WorkflowNotMoved) as async_refusal:
        run(lambda: services.anext(idle.pk))

    assert async_refusal.value.code == sync_refusal.value.code == "not_running"
    assert str(async_refusal.value) == str(sync_refusal.value)
    assert reload(idle).revision == idle.revision


async def as_a_request_of_its_own(call: Callable[[], Awaitable[Any]]) -> Any:
    """``call`` in a thread-sensitive context of its own, as Django's ASGI handler gives a
    request: a thread, and so a database connection, of its own (closed at the end)."""
    async with ThreadSensitiveContext():
        try:
            return await call()
        except Exception as error:  # the answer this request gets
            return error
        finally:
            await sync_to_async(connections.close_all)()


def race_on_a_locked_row(instance: WorkflowInstance, *calls: Callable[[], Awaitable[Any]]
                         ) -> list[Any]:
    """Start every call while another session holds the instance's row; let go only when
    each call is seen waiting for that lock; answer what each returned or raised."""
    answers: list[Any] = []

    def loop() -> None:
        async def every_call() -> list[Any]:
            return await asyncio.gather(*(as_a_request_of_its_own(call) for call in calls))

        answers.extend(asyncio.run(every_call()))

    racing = threading.Thread(target=loop, daemon=True)
    with dbutil.instance_locked_elsewhere(instance.pk):
        racing.start()
        wait_for(lambda: dbutil.sessions_waiting_for_a_lock() == len(calls), timeout=JOIN_TIMEOUT,
                 interval=dbutil.LOCK_WAIT_POLL, message="every call to wait for the row lock")
    racing.join(JOIN_TIMEOUT)
    assert not racing.is_alive(), "a call never finished: a deadlock or an endless wait"
    return answers


@pytest.mark.real_locks
@pytest.mark.django_db(transaction=True)
def test_two_anext_at_once_take_turns_on_the_row_lock_and_the_second_moves_from_the_first():
    instance = services.create("long-manual", start=True)

    answers = race_on_a_locked_row(instance, *[
        lambda: services.anext(instance.pk, lock_timeout=JOIN_TIMEOUT)] * 2)

    row = reload(instance)
    assert sorted(answer.current_step for answer in answers) == ["s1", "s2"]
    assert (row.current_step, row.revision) == ("s2", instance.revision + 2)
    assert left_steps(row) == ["s0", "s1"]


@pytest.mark.real_locks
@pytest.mark.django_db(transaction=True)
def test_two_anext_at_once_from_one_revision_move_once_and_the_other_is_stale():
    instance = services.create("long-manual", start=True)

    answers = race_on_a_locked_row(instance, *[
        lambda: services.anext(instance.pk, expected_revision=instance.revision,
                               lock_timeout=JOIN_TIMEOUT)] * 2)

    moved = [answer for answer in answers if isinstance(answer, WorkflowInstance)]
    stale = [answer for answer in answers if isinstance(answer, StaleRevision)]
    assert (len(moved), len(stale)) == (1, 1), answers
    row = reload(instance)
    assert (row.current_step, row.revision) == ("s1", instance.revision + 1)
    assert left_steps(row) == ["s0"]
