"""Locking an instance's tree: root first, waits bounded, a wait too long answers Busy.

The tests with threads run on the databases with real row locks (PostgreSQL,
MariaDB/MySQL); every thread has its own connection, and every join has a
timeout, so a deadlock or an unbounded wait fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext

from django_workflows import services
from django_workflows.exceptions import Busy
from django_workflows.models import WorkflowInstance
from django_workflows.services.sql import statements
from django_workflows.services.sql.mysql import MariaDB
from django_workflows.services.unit import busy_as_error
from tests import dbutil

pytestmark = pytest.mark.django_db(transaction=True)

JOIN_TIMEOUT = 30.0  # seconds: a thread still running then is a deadlock or an endless wait


def lock_tree(pk: Any, *, timeout: float) -> list[WorkflowInstance]:
    """Lock as a unit of work does: through this connection's statements."""
    return statements().lock_tree(pk, timeout)


def bounded_wait(seconds: float) -> Any:
    return statements().bounded_wait(seconds)


def lock_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        return cursor.fetchone()[0]


def innodb_lock_wait_timeout() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@SESSION.innodb_lock_wait_timeout")
        return int(cursor.fetchone()[0])


def set_innodb_lock_wait_timeout(value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET SESSION innodb_lock_wait_timeout = {value}")


def parent_at_its_nested_step() -> tuple[WorkflowInstance, WorkflowInstance]:
    parent = services.create("parent", start=True)
    services.next(parent.pk)
    return (WorkflowInstance.objects.get(pk=parent.pk),
            WorkflowInstance.objects.get(parent=parent.pk))


@contextmanager
def row_locked_by_another_session(pk: Any) -> Iterator[None]:
    """The row ``pk`` locked by a thread of its own (its own connection) until the end."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk=pk)
                locked.set()
                release.wait(JOIN_TIMEOUT)
        finally:
            connection.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert locked.wait(JOIN_TIMEOUT), "the holder did not get the lock"
        yield
    finally:
        release.set()
        holder.join(JOIN_TIMEOUT)
    assert not holder.is_alive()


def in_thread(function: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``function`` on a thread with its own connection; the dict gets its result or error."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = function()
        except BaseException as error:  # the test looks at it
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


# -- bounded waits and Busy ------------------------------------------------------------------


@pytest.mark.real_locks
def test_a_lock_wait_longer_than_the_timeout_answers_busy():
    instance = services.create("long-manual", start=True)

    with row_locked_by_another_session(instance.pk):
        began = time.monotonic()
        with pytest.raises(Busy), busy_as_error(0.5), transaction.atomic():
            lock_tree(instance.pk, timeout=0.5)
        waited = time.monotonic() - began

    # 0.5 s; MariaDB/MySQL count whole seconds and wait 1 s.
    assert 0.4 <= waited < 3.0


@pytest.mark.real_locks
def test_a_lock_wait_on_a_child_is_bounded_too():
    _, child = parent_at_its_nested_step()

    with row_locked_by_another_session(child.pk):
        began = time.monotonic()
        with pytest.raises(Busy), busy_as_error(0.5), transaction.atomic():
            lock_tree(child.pk, timeout=0.5)
        waited = time.monotonic() - began

    assert 0.4 <= waited < 3.0


@pytest.mark.mysql
def test_bounded_wait_sets_the_sessions_innodb_wait_in_whole_seconds_and_puts_it_back():
    instance = services.create("long-manual", start=True)
    set_innodb_lock_wait_timeout("7")
    try:
        with (row_locked_by_another_session(instance.pk), pytest.raises(Busy),
              busy_as_error(0.2), transaction.atomic(), bounded_wait(0.2)):
            assert innodb_lock_wait_timeout() == 1  # 0.2 s rounded up
            with bounded_wait(2.5):  # nested: the outer one's setting comes back
                assert innodb_lock_wait_timeout() == 3
            assert innodb_lock_wait_timeout() == 1
            WorkflowInstance.objects.select_for_update().get(pk=instance.pk)

        assert innodb_lock_wait_timeout() == 7  # after the timeout too: it outlives transactions
    finally:
        set_innodb_lock_wait_timeout("DEFAULT")


@pytest.mark.mysql
def test_on_mariadb_locking_a_root_is_one_statement_that_bounds_its_own_wait():
    if not isinstance(statements(), MariaDB):
        pytest.skip("MySQL has no FOR UPDATE WAIT n; bounded_wait sets the session instead")
    instance = services.create("wizard", start=True)
    before = innodb_lock_wait_timeout()

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        chain = lock_tree(instance.pk, timeout=2.5)

    assert [row.pk for row in chain] == [instance.pk]
    assert len(queries) == 1
    assert queries[0]["sql"].endswith("FOR UPDATE WAIT 3")
    assert innodb_lock_wait_timeout() == before


# -- lock order --------------------------------------------------------------------------------


@pytest.mark.real_locks
def test_locking_a_child_takes_its_parents_lock_before_it_waits_for_its_own():
    parent, child = parent_at_its_nested_step()

    def lock_the_childs_tree() -> list[Any]:
        with transaction.atomic():
            chain = lock_tree(child.pk, timeout=JOIN_TIMEOUT / 2)
            return [row.pk for row in chain]

    with row_locked_by_another_session(child.pk):
        locker, outcome = in_thread(lock_the_childs_tree)
        # It waits for the child's row now.
        assert dbutil.a_session_waits_for_a_lock(JOIN_TIMEOUT / 2), outcome
        # Holding the parent's lock while it waits: a parent command waits behind it, and
        # never holds the parent while waiting for the child the other way round.
        with pytest.raises(OperationalError), transaction.atomic():
            WorkflowInstance.objects.select_for_update(nowait=True).get(pk=parent.pk)
    locker.join(JOIN_TIMEOUT)

    assert not locker.is_alive()
    assert outcome == {"result": [parent.pk, child.pk]}


# -- PostgreSQL: the bounded wait in the lock's round trip ----------------------------------


@pytest.mark.postgres
def test_locking_a_root_takes_one_round_trip_and_leaves_the_lock_timeout_as_it_was():
    instance = services.create("wizard", start=True)

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '7s'")
        lock_tree(instance.pk, timeout=2)  # the connection prepares its statements once
        seen: list[str] = []

        def record(execute, sql, params, many, context):
            seen.append(dbutil.spelled_out(sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            chain = lock_tree(instance.pk, timeout=2)
        assert lock_timeout() == "7s"

    assert [row.pk for row in chain] == [instance.pk]
    assert len(seen) == 1
    assert "set_config('lock_timeout', '2000ms', true)" in seen[0]


@pytest.mark.postgres
def test_locking_a_child_locks_its_parent_first_and_leaves_the_lock_timeout_as_it_was():
    parent, child = parent_at_its_nested_step()

    with transaction.atomic():
        chain = lock_tree(child.pk, timeout=2)
        assert lock_timeout() == "0"

    assert [row.pk for row in chain] == [parent.pk, child.pk]
