"""The ORM internals our own SQL uses (``services/sql/orm.py``), pinned.

``RowReader`` makes model instances from raw rows as a queryset does, through the
compiler's converters; ``mark_saved`` makes an inserted row look saved to the ORM.
Neither is documented Django: these tests hold them to what the ORM itself does, and
``scripts/test`` runs them on every supported Django version (5.2 and 6.1 with the
whole suite, 6.0 on their own).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.services.sql.orm import RowReader, mark_saved

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


def test_a_row_marked_saved_is_one_the_orm_updates_refreshes_and_deletes():
    instance = WorkflowInstance.objects.create(workflow="wizard", version=1)
    inserted = WorkflowEvent.objects.create(instance=instance, sequence=1, type="start",
                                            revision=1)
    event = WorkflowEvent(instance=instance, sequence=1, type="start", revision=1)  # ours
    assert event._state.adding

    mark_saved(event, inserted.pk, connection.alias)

    assert (event.pk, event._state.adding, event._state.db) == (
        inserted.pk, False, connection.alias)
    event.type = "resume"
    event.save()  # an UPDATE of that row, not a second INSERT
    assert list(WorkflowEvent.objects.values_list("pk", "type")) == [(inserted.pk, "resume")]
    event.refresh_from_db()
    event.delete()
    assert not WorkflowEvent.objects.exists()
