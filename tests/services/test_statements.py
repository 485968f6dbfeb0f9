"""The hot path's hand-built statements read and write exactly what the ORM would."""

from __future__ import annotations

import gc
import threading
import uuid
import weakref
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import close_old_connections, connections, transaction
from django.test.utils import CaptureQueriesContext

from django_workflows import services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.services.sql import EventRow, statements
from tests.dbutil import instance_locked_elsewhere

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in WorkflowInstance._meta.concrete_fields]


def values(row: WorkflowInstance) -> dict:
    return {name: getattr(row, name) for name in FIELDS}


def event_row(instance: WorkflowInstance, sequence: int, **values) -> EventRow:
    """An event row as the hot path writes it; what is not given as a new event has it."""
    given = {"type": "validate", "step": "", "actor_id": None, "revision": 1, "error": None,
             "data": {}, "created_at": datetime.now(UTC), **values}
    return EventRow(instance, sequence=sequence, **given)


def test_a_locked_row_is_the_row_the_orm_loads():
    parent = services.create("parent", start=True, state={"n": 1, "nested": {"a": [1, None]}})
    services.next(parent.pk)
    parent.refresh_from_db()
    child_id = parent.nested_id

    with transaction.atomic():
        for pk in (parent.pk, str(parent.pk), child_id):
            locked = statements().locked(pk)
            assert values(locked) == values(WorkflowInstance.objects.get(pk=pk))
            assert not locked._state.adding and locked._state.db == "default"
        assert statements().locked(parent.pk, root=True).pk == parent.pk
        assert statements().locked(child_id, root=True) is None  # it has a parent
        assert statements().locked(uuid.uuid4()) is None


def test_an_id_that_is_no_uuid_is_refused_as_the_orm_refuses_it():
    with pytest.raises(ValidationError):
        statements().locked("no-uuid")


def test_update_writes_the_named_columns_only():
    row = services.create("wizard")
    stale = WorkflowInstance.objects.get(pk=row.pk)
    row.state = {"email": "ada@example.com", "plan": None}
    row.snapshot = {"history": ["account"], "odd": "ünïcode ✓"}
    row.started_at = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    row.current_step = "account"
    row.revision = 7
    row.status = "blocked"  # changed, but not named: not written

    with transaction.atomic():
        statements().update(row, ["state", "snapshot", "started_at", "current_step",
                                  "revision"])

    saved = WorkflowInstance.objects.get(pk=row.pk)
    assert values(saved) == {**values(row), "status": stale.status}


def test_update_of_a_missing_row_raises():
    row = WorkflowInstance(workflow="wizard", version=1)
    with pytest.raises(WorkflowInstance.DoesNotExist), transaction.atomic():
        statements().update(row, ["revision"])


def test_insert_writes_events_as_bulk_create_would_and_sets_their_keys():
    row = services.create("wizard")
    actor = get_user_model().objects.create(username="ada")
    now = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    events = [event_row(row, 100 + i, type="step-enter", step=f"s{i}",
                        actor_id=actor.pk if i % 2 else None, revision=3,
                        error={"message": "x"} if i == 1 else None,
                        data={"i": i, "list": [1, "two"]}, created_at=now)
              for i in range(3)]

    with transaction.atomic():
        statements().insert(events)

    assert all(e.pk is not None and e.db == "default" for e in events)
    stored = {e.pk: e for e in WorkflowEvent.objects.filter(instance=row, sequence__gte=100)}
    assert sorted(stored) == sorted(e.pk for e in events)
    for event in events:
        again, model = stored[event.pk], event.as_model()
        for field in WorkflowEvent._meta.concrete_fields:
            assert getattr(again, field.attname) == getattr(model, field.attname), field.name
    assert stored[events[1].pk].error == {"message": "x"}
    assert stored[events[0].pk].error is None


def test_insert_splits_what_the_database_cannot_take_in_one_statement():
    row = services.create("wizard")
    count = statements().batch_size([None] * 5000) + 3
    assert count <= 1003
    events = [event_row(row, 1000 + i) for i in range(count)]

    with transaction.atomic():
        statements().insert(events)

    assert WorkflowEvent.objects.filter(instance=row, sequence__gte=1000).count() == count
    assert len({e.pk for e in events}) == count


def test_each_thread_builds_its_own_and_lets_it_go_with_its_connection():
    mine = statements()
    assert statements() is mine
    seen: list = []

    def other() -> None:
        try:
            seen.append(weakref.ref(statements()))
            assert seen[0]() is not mine
        finally:
            connections.close_all()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(30)
    del thread
    gc.collect()
    assert seen and seen[0]() is None  # gone with the thread's connection


# -- one instance written only if unchanged (PostgreSQL) -------------------------------------


def _unchanged_write_of(row: WorkflowInstance) -> tuple[list[str], list[EventRow], list]:
    """A write of ``row`` (its state and revision), two events, and, as the statement for
    another row (``also``), an UPDATE of the reference of a second instance."""
    other = services.create("wizard")
    row.state, row.revision, row.last_event = {"seen": True}, row.revision + 1, 2
    events = [event_row(row, sequence, revision=row.revision) for sequence in (1, 2)]
    also = [('UPDATE "django_workflows_workflowinstance" SET "reference" = %s WHERE '
             '"id" = %s', ["also-written", other.pk])]
    return ["state", "revision", "last_event"], events, also


def _also_written() -> bool:
    return WorkflowInstance.objects.filter(reference="also-written").exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_unchanged_instance_is_written_in_one_statement_with_the_rest():
    row = services.create("wizard")
    names, events, also = _unchanged_write_of(row)

    assert statements().write_if_unchanged(row, names, row.revision - 1, events, also)

    saved = WorkflowInstance.objects.get(pk=row.pk)
    assert (saved.state, saved.revision) == ({"seen": True}, row.revision)
    assert _also_written()
    stored = WorkflowEvent.objects.filter(instance=row).order_by("sequence")
    assert [(e.pk, e.sequence) for e in stored] == [(e.pk, e.sequence) for e in events]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_instance_that_moved_on_is_not_written_nor_is_anything_with_it():
    row = services.create("wizard")
    services.start(row.pk)  # the row moves on after it was read
    names, events, also = _unchanged_write_of(row)

    assert not statements().write_if_unchanged(row, names, row.revision - 1, events, also)

    saved = WorkflowInstance.objects.get(pk=row.pk)
    assert saved.state != {"seen": True} and not _also_written()
    assert not WorkflowEvent.objects.filter(instance=row, type="validate").exists()
    assert all(event.pk is None for event in events)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_instance_another_transaction_holds_is_not_written_and_not_waited_for():
    row = services.create("wizard")
    names, events, also = _unchanged_write_of(row)

    with instance_locked_elsewhere(row.pk) as holder:
        written = statements().write_if_unchanged(row, names, row.revision - 1, events, also)
        still_held = holder.released_at is None

    assert still_held
    assert not written  # answered at once, while the other connection held the lock
    saved = WorkflowInstance.objects.get(pk=row.pk)
    assert saved.revision == row.revision - 1 and not _also_written()
    assert not WorkflowEvent.objects.filter(instance=row, type="validate").exists()


def statements_sent(action) -> list[str]:
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(record):
        action()
    return sent


@pytest.mark.postgres
def test_a_connection_prepares_its_hot_statements_once_then_executes_them():
    instance = services.create("long-manual", start=True)
    services.next(instance)  # prepared now, if not before

    sent = statements_sent(lambda: services.next(instance))

    assert not [sql for sql in sent if sql.startswith("PREPARE")]
    assert any(sql.startswith("EXECUTE dwf_") for sql in sent)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_them_again():
    instance = services.create("long-manual", start=True)
    services.next(instance)
    connections["default"].close()

    sent = statements_sent(lambda: services.next(instance))

    assert any(sql.startswith("PREPARE dwf_") for sql in sent)
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "s2"


@pytest.mark.postgres
def test_without_prepared_statements_the_sql_is_sent_as_it_is(settings):
    settings.DJANGO_WORKFLOWS = {"PREPARED_STATEMENTS": False}
    instance = services.create("long-manual", start=True)

    sent = statements_sent(lambda: services.next(instance))

    assert not [sql for sql in sent if sql.startswith(("PREPARE", "EXECUTE"))]
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "s1"


# -- the hot path's cursor, kept per connection (PostgreSQL) ---------------------------------


def _terminate(pid: int) -> None:
    """End the server session ``pid`` from a session of its own, as a restart or a
    proxy's idle timeout would."""
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()


@pytest.mark.postgres
def test_commands_in_a_row_make_no_new_cursor(monkeypatch):
    instance = services.create("long-manual", start=True)
    services.next(instance)  # its hot statements' cursor made now, if not before
    connection, made = connections["default"], []
    make = connection.cursor
    monkeypatch.setattr(connection, "cursor", lambda *args: made.append(1) or make(*args))

    services.back(services.next(instance))

    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "s1"
    assert made == [1]  # the last line's; both commands ran on the kept cursor


@pytest.mark.postgres
def test_queries_logged_include_those_of_the_hot_path():
    instance = services.create("long-manual", start=True)
    services.next(instance)  # the cursor kept, made while no query was logged

    with CaptureQueriesContext(connections["default"]) as captured:
        services.next(instance)

    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "s2"
    assert [q["sql"] for q in captured.captured_queries if q["sql"].startswith("EXECUTE dwf_")]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_is_replaced_when_health_checks_are_on(monkeypatch):
    connection = connections["default"]
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", True)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)
    connection.close()
    instance = services.create("long-manual", start=True)
    services.next(instance)  # a connection with health checks, and its kept cursor
    _terminate(connection.connection.info.backend_pid)

    close_old_connections()  # a new request: its first query checks the connection
    services.next(instance)

    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "s2"
    connection.close()
