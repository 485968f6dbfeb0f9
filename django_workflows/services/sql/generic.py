"""The instance rows' SQL for one database connection: the family every database Django
supports falls back to (SQLite here), and the base of the others.

Every command locks its rows, updates the changed columns and inserts its
events. Built by the ORM each time, those statements cost most of a command's
Python time (see the README's benchmarks); here each is built once per database
connection and then only executed. Values go through the fields' own
``get_db_prep_save``, and rows read come out as a queryset makes them
(``orm.py``). Model signals (``pre_save``/``post_save``) are not sent for these
rows; the app's own ``workflow_event`` signal is.

How long a lock is waited for is each family's own policy (:meth:`Statements.bounded_wait`,
:meth:`Statements.lock_clause`), and so is how a wait that timed out is told
(:meth:`Statements.is_lock_timeout`). A tree is always locked root first, then down its
nested chain, so a parent's command and a child's never deadlock.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any
from uuid import UUID

from django.db.models import Field

from ...exceptions import InstanceNotFound
from ...models import WorkflowEvent, WorkflowInstance
from .attempts import AttemptStatements, Statement
from .orm import RowReader

# Rows per INSERT: PostgreSQL takes at most 65,535 parameters in one statement.
MAX_BATCH = 1000

class EventRow:
    """An event row as the hot path writes it: the values of ``WorkflowEvent``'s columns,
    by their attribute names, without a model instance (making one per event cost the
    worker more than anything else it did). :meth:`as_model` makes one when it is needed
    (a receiver of ``workflow_event`` gets the model instance). Once inserted, ``pk`` is
    its key and ``db`` the alias of the database that holds it."""

    __slots__ = ("actor_id", "created_at", "data", "db", "error", "instance", "instance_id",
                 "pk", "revision", "sequence", "step", "type")

    def __init__(self, instance: WorkflowInstance, *, sequence: int, type: str, step: str,
                 actor_id: Any, revision: int, error: Any, data: Any, created_at: Any
                 ) -> None:
        self.instance, self.instance_id = instance, instance.pk
        self.sequence, self.type, self.step, self.actor_id = sequence, type, step, actor_id
        self.revision, self.error, self.data, self.created_at = revision, error, data, created_at
        self.pk: Any = None
        self.db = ""

    def as_model(self) -> WorkflowEvent:
        """The ``WorkflowEvent`` it is: once inserted, as the ORM loads it (``from_db``)."""
        fields = event_fields()
        if self.pk is None:
            event = WorkflowEvent(**{field.attname: getattr(self, field.attname)
                                     for field in fields if not field.primary_key})
        else:  # from_db takes every column's value, in the model's order
            event = WorkflowEvent.from_db(self.db, [field.attname for field in fields], [
                self.pk if field.primary_key else getattr(self, field.attname)
                for field in fields])
        event.instance = self.instance  # the one in hand: reading it costs no query
        return event

    def inserted(self, pk: Any, db: str) -> None:
        self.pk, self.db = pk, db


@cache
def event_fields() -> list[Field[Any, Any]]:
    """``WorkflowEvent``'s columns, in the model's order."""
    return list(WorkflowEvent._meta.concrete_fields)


Insert = tuple[str, list[Any], Sequence[EventRow]]  # an events' INSERT, and its batch


class Statements:
    """SQL and converters of the instance rows and their events, for one connection."""

    attempts_class: type[AttemptStatements] = AttemptStatements
    # Whether :meth:`write_if_unchanged` exists: one statement that writes an instance only
    # if it is as it was read, without waiting for its lock.
    writes_if_unchanged = False

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        qn = connection.ops.quote_name
        meta = WorkflowInstance._meta
        self.reader = RowReader(WorkflowInstance, connection)
        self.pk: Field[Any, Any] = meta.pk
        self.by_name = {field.name: field for field in self.reader.fields}
        self.table = qn(meta.db_table)
        self.pk_column = qn(self.pk.column)
        self.parent_column = qn(meta.get_field("parent").column)
        self.where_pk = f"{self.pk_column} = %s"
        self.columns = ", ".join(qn(field.column) for field in self.reader.fields)
        self.select_columns = f"SELECT {self.columns} FROM {self.table}"
        self.read = f"{self.select_columns} WHERE {self.where_pk}"
        self.read_root = f"{self.read} AND {self.parent_column} IS NULL"
        self.sets: dict[tuple[str, ...], str] = {}  # SET clauses by column names
        events = WorkflowEvent._meta
        self.events_table = qn(events.db_table)
        self.event_fields: list[Field[Any, Any]] = [
            f for f in events.concrete_fields if not f.primary_key]
        self.event_columns = ", ".join(qn(field.column) for field in self.event_fields)
        self.insert_events = f"INSERT INTO {self.events_table} ({self.event_columns}) VALUES "
        self.event_values = f"({', '.join(['%s'] * len(self.event_fields))})"
        self.returning = f" RETURNING {qn(events.pk.column)}"
        self.attempts = self.attempts_class(self)

    # -- reading ------------------------------------------------------------------------

    def pk_value(self, value: Any) -> Any:
        return self.pk.get_db_prep_value(self.pk.to_python(value), self.connection)

    def row(self, pk: Any) -> WorkflowInstance | None:
        """The row ``pk`` as committed, without a lock (a worker's claim reads its work)."""
        return self.fetch(self.read, [self.pk_value(pk)])

    def fetch(self, sql: str, params: list[Any]) -> WorkflowInstance | None:
        """The instance a query of ``select_columns`` finds (None: no row)."""
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return self.reader.first(cursor.fetchall())

    # -- locking ------------------------------------------------------------------------

    def lock_clause(self, within: float | None) -> str:
        """What ends a locking read; ``within``: seconds to wait, where the clause says so."""
        return " FOR UPDATE" if self.connection.features.has_select_for_update else ""

    @contextmanager
    def bounded_wait(self, seconds: float) -> Iterator[None]:
        """Wait at most ``seconds`` for each row lock taken inside (use it in a transaction).

        SQLite takes its one write lock when the transaction begins
        (``transaction_mode="IMMEDIATE"``) and waits as long as its ``timeout`` says.
        """
        yield

    def is_lock_timeout(self, error: BaseException) -> bool:
        """Whether a database error says a lock was not granted in time."""
        return "database is locked" in str(error)

    def locked(self, pk: Any, *, root: bool = False, within: float | None = None
               ) -> WorkflowInstance | None:
        """The row ``pk`` (only if it has no parent, with ``root``), locked for update."""
        return self.fetch((self.read_root if root else self.read) + self.lock_clause(within),
                          [self.pk_value(pk)])

    def lock_tree(self, instance_id: UUID | str, timeout: float) -> list[WorkflowInstance]:
        """Lock the tree ``instance_id`` belongs to, waiting at most ``timeout`` seconds
        for each lock; its chain, root first.

        A child no longer attached to its parent (a later step started another
        one) is its own tree. InstanceNotFound when there is no such instance.
        """
        with self.bounded_wait(timeout):
            return self.chain_from(self.lock_root_of(instance_id, timeout), instance_id, timeout)

    def lock_tree_unless_busy(self, instance_id: UUID | str, timeout: float
                              ) -> list[WorkflowInstance] | None:
        """:meth:`lock_tree`, or None when another transaction holds the tree's root
        (the sweep then leaves it for its next turn)."""
        root = WorkflowInstance.objects.using(self.connection.alias).select_for_update(
            skip_locked=True).filter(pk=self.root_id(instance_id)).values_list("pk", flat=True)
        if not list(root):
            return None
        return self.lock_tree(instance_id, timeout)

    def lock_root_of(self, instance_id: UUID | str, within: float) -> WorkflowInstance:
        """The root of ``instance_id``'s tree, locked: ``instance_id`` itself if it has no
        parent, else the topmost parent found by reading up."""
        root = self.locked(instance_id, root=True, within=within)
        return root if root is not None else self.locked_or_missing(
            self.root_id(instance_id), within)

    def locked_or_missing(self, pk: Any, within: float | None = None) -> WorkflowInstance:
        row = self.locked(pk, within=within)
        if row is None:
            raise InstanceNotFound(f"No workflow instance {pk}")
        return row

    def chain_from(self, root: WorkflowInstance, instance_id: object,
                   within: float | None = None) -> list[WorkflowInstance]:
        """Lock down the nested chain from the locked ``root``; the chain ``instance_id``
        is in."""
        chain = [root]
        while chain[-1].nested_id:
            chain.append(self.locked_or_missing(chain[-1].nested_id, within))
        if str(instance_id) not in {str(row.pk) for row in chain}:
            chain = [self.locked_or_missing(instance_id, within)]
        return chain

    def root_id(self, instance_id: UUID | str) -> UUID | str:
        """The id of the instance's topmost parent, found without locking (a parent never
        changes)."""
        seen = set()
        current: UUID | str = instance_id
        rows = WorkflowInstance.objects.using(self.connection.alias)
        while True:
            found = list(rows.filter(pk=current).values_list("parent_id", flat=True))
            if not found:
                raise InstanceNotFound(f"No workflow instance {instance_id}")
            if found[0] is None or found[0] in seen:
                return current
            seen.add(current)
            current = found[0]

    # -- writing ------------------------------------------------------------------------

    def update(self, row: WorkflowInstance, names: Sequence[str]) -> None:
        """``UPDATE`` the columns ``names`` of ``row``, as ``save(update_fields=...)`` would."""
        self.write([(row, names)], [])

    def update_of(self, row: WorkflowInstance, names: Sequence[str]) -> Statement:
        """The ``UPDATE`` of the columns ``names`` of ``row`` and its parameters."""
        sets, params = self.sets_of(row, names)
        return (f"UPDATE {self.table} SET {sets} WHERE {self.where_pk}",
                [*params, self.pk.get_db_prep_value(row.pk, self.connection)])

    def sets_of(self, row: WorkflowInstance, names: Sequence[str]) -> Statement:
        """``SET`` the columns ``names`` to the values of ``row``: the SQL and its parameters."""
        key = tuple(names)
        fields = [self.by_name[name] for name in key]
        sql = self.sets.get(key)
        if sql is None:
            qn = self.connection.ops.quote_name
            sql = self.sets[key] = ", ".join(f"{qn(field.column)} = %s" for field in fields)
        return sql, [field.get_db_prep_save(getattr(row, field.attname), self.connection)
                     for field in fields]

    def write(self, changed: Sequence[tuple[WorkflowInstance, Sequence[str]]],
              events: Sequence[EventRow], also: Sequence[Statement] = ()) -> None:
        """The ``UPDATE`` of each instance's changed columns (a row and their names),
        ``also`` (other rows' statements, such as the attempt's), then the events' ``INSERT``."""
        with self.connection.cursor() as cursor:
            for sql, params in (self.update_of(row, names) for row, names in changed):
                cursor.execute(sql, params)
                self.updated_one(cursor)
            for sql, params in also:
                cursor.execute(sql, params)
            self.insert_with(cursor, events)

    def write_if_unchanged(self, row: WorkflowInstance, names: Sequence[str], revision: int,
                           events: Sequence[EventRow], also: Sequence[Statement] = ()
                           ) -> bool:
        """Only where ``writes_if_unchanged`` says so (PostgreSQL)."""
        raise NotImplementedError(f"{type(self).__name__} has no write_if_unchanged")

    @staticmethod
    def updated_one(cursor: Any) -> None:
        if cursor.rowcount != 1:
            raise WorkflowInstance.DoesNotExist("A workflow instance to update is gone")

    def insert(self, events: Sequence[EventRow]) -> None:
        """Insert event rows (one statement per batch), setting their primary keys."""
        with self.connection.cursor() as cursor:
            self.insert_with(cursor, events)

    def insert_with(self, cursor: Any, events: Sequence[EventRow]) -> None:
        if events and not self.connection.features.can_return_rows_from_bulk_insert:
            models = [event.as_model() for event in events]
            WorkflowEvent.objects.using(self.connection.alias).bulk_create(models)
            for event, model in zip(events, models, strict=True):
                event.inserted(model.pk, self.connection.alias)
            return
        for sql, params, batch in self.inserts(events):
            cursor.execute(sql, params)
            self.keys(batch, cursor.fetchall())

    def batch_size(self, events: Sequence[EventRow]) -> int:
        """Events per ``INSERT``: what the database takes, and at most 1,000."""
        taken: int = self.connection.ops.bulk_batch_size(self.event_fields, events)
        return max(min(taken, MAX_BATCH), 1)

    def inserts(self, events: Sequence[EventRow]) -> list[Insert]:
        """The events' ``INSERT ... RETURNING`` statements, a batch each."""
        size = self.batch_size(events) if events else 1
        return [(self.insert_events + ", ".join([self.event_values] * len(batch))
                 + self.returning, self.insert_params(batch), batch)
                for batch in (events[start:start + size]
                              for start in range(0, len(events), size))]

    def insert_params(self, batch: Sequence[EventRow]) -> list[Any]:
        # The value each field saves: its attribute (no event field has auto_now).
        return [field.get_db_prep_save(getattr(event, field.attname), self.connection)
                for event in batch for field in self.event_fields]

    def keys(self, batch: Sequence[EventRow], keys: Sequence[Sequence[Any]]) -> None:
        for event, (key,) in zip(batch, keys, strict=True):
            event.inserted(key, self.connection.alias)
