"""The ORM internals our own SQL uses (``services/sql/orm.py``), pinned.

``RowReader`` makes model instances from raw rows as a queryset does, through the
compiler's converters (``Query.get_compiler``, ``Field.get_col``,
``SQLCompiler.get_converters`` and ``apply_converters``: none documented Django); an
inserted event row's model is made by ``Model.from_db``, which Django documents. These
tests hold them to what the ORM itself does, and ``scripts/test`` runs them on every
supported Django version (5.2 and 6.1 with the whole suite, 6.0 on their own).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.services.sql import EventRow, statements
from django_workflows.services.sql.orm import RowReader

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in WorkflowInstance._meta.concrete_fields]
COLUMNS = ", ".join(connection.ops.quote_name(f.column)
                    for f in WorkflowInstance._meta.concrete_fields)
TABLE = connection.ops.quote_name(WorkflowInstance._meta.db_table)


def raw_rows(pk: object) -> list[tuple]:
    """The row as the driver returns it, before any converter."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {COLUMNS} FROM {TABLE} WHERE "
                       f"{connection.ops.quote_name('id')} = %s",
                       [WorkflowInstance._meta.pk.get_db_prep_value(pk, connection)])
        return cursor.fetchall()


def test_a_row_read_raw_comes_out_as_the_orm_loads_it():
    owner = get_user_model().objects.create_user("owner")
    parent = WorkflowInstance.objects.create(workflow="wizard", version=1, owner=owner,
                                             state={"n": 1, "nested": {"a": [1, None, "é"]}})
    row = WorkflowInstance.objects.create(
        workflow="wizard", version=2, parent=parent, reference="R-1", status="blocked",
        state={"ünïcode": "✓", "list": [1.5, True, None]}, snapshot={"history": ["a"]},
        started_at=datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC))

    read = RowReader(WorkflowInstance, connection).first(raw_rows(row.pk))

    loaded = WorkflowInstance.objects.get(pk=row.pk)
    assert {n: getattr(read, n) for n in FIELDS} == {n: getattr(loaded, n) for n in FIELDS}
    assert type(read.pk) is type(loaded.pk) and isinstance(read.state, dict)
    assert read.started_at == datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert not read._state.adding and read._state.db == connection.alias


def test_a_row_read_raw_saves_and_deletes_as_one_the_orm_loaded():
    row = WorkflowInstance.objects.create(workflow="wizard", version=1)
    read = RowReader(WorkflowInstance, connection).first(raw_rows(row.pk))

    read.status = "running"
    read.save(update_fields=["status"])  # an UPDATE: it exists
    assert WorkflowInstance.objects.get(pk=row.pk).status == "running"
    read.delete()
    assert not WorkflowInstance.objects.filter(pk=row.pk).exists()


def test_no_row_reads_as_none():
    assert RowReader(WorkflowInstance, connection).first([]) is None


def test_each_kind_of_column_comes_out_as_the_orm_loads_it_null_or_not():
    owner = get_user_model().objects.create_user("owner")
    parent = WorkflowInstance.objects.create(workflow="wizard", version=1)
    full = WorkflowInstance.objects.create(
        workflow="wizard", version=3, parent=parent, owner=owner, reference="R-2",
        awaiting="payment", correlation="c-1", state={}, snapshot={"n": 0.5},
        started_at=datetime(2030, 1, 2, tzinfo=UTC),
        completed_at=datetime(2030, 1, 3, 4, 5, 6, 7, tzinfo=UTC))
    empty = WorkflowInstance.objects.create(workflow="wizard", version=1, state={},
                                            snapshot={})

    for row in (full, empty):
        read = RowReader(WorkflowInstance, connection).first(raw_rows(row.pk))
        loaded = WorkflowInstance.objects.get(pk=row.pk)
        for name in FIELDS:
            value = getattr(read, name)
            assert (value, type(value)) == (getattr(loaded, name),
                                            type(getattr(loaded, name))), name


def test_an_inserted_event_row_is_a_model_the_orm_updates_refreshes_and_deletes():
    instance = WorkflowInstance.objects.create(workflow="wizard", version=1)
    row = EventRow(instance, sequence=1, type="start", step="", actor_id=None, revision=1,
                   error=None, data={"a": 1}, created_at=datetime(2030, 1, 2, tzinfo=UTC))
    with transaction.atomic():
        statements().insert([row])

    with CaptureQueriesContext(connection) as read:
        event = row.as_model()
        assert event.instance is instance  # the one in hand, not read again
    assert read.captured_queries == []

    stored = WorkflowEvent.objects.get()
    assert (event.pk, event._state.adding, event._state.db) == (
        stored.pk, False, connection.alias)
    assert {f.attname: getattr(event, f.attname) for f in WorkflowEvent._meta.concrete_fields
            } == {f.attname: getattr(stored, f.attname)
                  for f in WorkflowEvent._meta.concrete_fields}
    event.type = "resume"
    event.save()  # an UPDATE of that row, not a second INSERT
    assert list(WorkflowEvent.objects.values_list("pk", "type")) == [(stored.pk, "resume")]
    event.refresh_from_db()
    event.delete()
    assert not WorkflowEvent.objects.exists()


def test_an_event_row_not_inserted_is_a_new_model():
    instance = WorkflowInstance.objects.create(workflow="wizard", version=1)
    row = EventRow(instance, sequence=1, type="start", step="", actor_id=None, revision=1,
                   error=None, data={}, created_at=datetime(2030, 1, 2, tzinfo=UTC))

    event = row.as_model()

    assert event.pk is None and event._state.adding and event.instance is instance
    event.save()
    assert WorkflowEvent.objects.get().pk == event.pk
