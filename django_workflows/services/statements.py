"""The hot path's SQL, built once per connection from the models' own metadata.

Every command locks its rows, updates the changed columns and inserts its
events. Built by the ORM each time, those three statements cost most of a
command's Python time (see the README's benchmarks); here each is built once
per database connection and then only executed. Values go through the
fields' own ``get_db_prep_save`` and read values through the same converters
a queryset uses, so every database Django supports gets what the ORM would
send. Model signals (``pre_save``/``post_save``) are not sent for these rows;
the app's own ``workflow_event`` signal is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar, cast
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field
from django.db.models.sql import Query

from ..models import Attempt, WorkflowEvent, WorkflowInstance

T = TypeVar("T")
ATTRIBUTE = "_django_workflows_statements"  # on the connection: its statements
SAVED_LOCK_TIMEOUT = "django_workflows.lock_timeout"  # a transaction-local placeholder setting
# Rows per INSERT: PostgreSQL takes at most 65,535 parameters in one statement.
MAX_BATCH = 1000
WRITTEN = "EXISTS (SELECT FROM dwf_instance)"  # in write_if_unchanged: the instance was


class Statements:
    """SQL and converters for one database connection (one thread's wrapper)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        ops, qn = connection.ops, connection.ops.quote_name
        meta = WorkflowInstance._meta
        self.pk: Field[Any, Any] = meta.pk
        self.fields: list[Field[Any, Any]] = list(meta.concrete_fields)
        self.attnames = [field.attname for field in self.fields]
        self.by_name = {field.name: field for field in self.fields}
        self.table = qn(meta.db_table)
        self.pk_column = qn(self.pk.column)
        self.where_pk = f"{self.pk_column} = %s"
        columns = ", ".join(qn(field.column) for field in self.fields)
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        parent = qn(meta.get_field("parent").column)
        self.select_root = (f"SELECT {columns} FROM {self.table} "
                            f"WHERE {self.where_pk} AND {parent} IS NULL{lock}")
        self.select_columns = f"SELECT {columns} FROM {self.table}"
        self.read = f"{self.select_columns} WHERE {self.where_pk}"
        self.select = self.read + lock
        # InnoDB (MariaDB, MySQL) locks every row a locking read looks at, even one its WHERE
        # then refuses: select_root would lock a child before its root. There the root is
        # found by reading up the parents in a recursive CTE and only the root is locked, in
        # one statement: FOR UPDATE does not lock what its subqueries read (MySQL documents
        # it; MariaDB does the same, and tests/services/test_locking.py holds it to that).
        self.finds_root_unlocked = connection.vendor == "mysql"
        # MariaDB bounds a lock wait in the statement (FOR UPDATE WAIT n, whole seconds);
        # MySQL 8 has no WAIT n: there bounded_wait sets the session's lock wait timeout.
        self.waits_in_statement = self.finds_root_unlocked and _is_mariadb(connection)
        pk_column = qn(self.pk.column)
        self.select_root_of = (
            f"WITH RECURSIVE dwf_up (node, parent) AS ("
            f"SELECT {pk_column}, {parent} FROM {self.table} WHERE {self.where_pk} "
            f"UNION SELECT dwf_row.{pk_column}, dwf_row.{parent} FROM {self.table} AS dwf_row "
            f"JOIN dwf_up ON dwf_row.{pk_column} = dwf_up.parent) "
            f"SELECT {columns} FROM {self.table} WHERE {pk_column} = "
            f"(SELECT node FROM dwf_up WHERE parent IS NULL){lock}"
        ) if self.finds_root_unlocked else None
        # PostgreSQL with client-side binding (psycopg 3's default) runs several statements
        # in one round trip: keep the lock_timeout, set it, lock, put it back.
        self.bounded_root = (
            f"SELECT set_config('{SAVED_LOCK_TIMEOUT}', current_setting('lock_timeout'), true); "
            "SELECT set_config('lock_timeout', %s, true); "
            f"{self.select_root}; "
            f"SELECT set_config('lock_timeout', current_setting('{SAVED_LOCK_TIMEOUT}'), true)"
        ) if _several_statements_at_once(connection) else None
        self.several_at_once = self.bounded_root is not None
        # Writes in WITH, and FOR UPDATE SKIP LOCKED: write_if_unchanged.
        self.writes_if_unchanged = connection.vendor == "postgresql"
        self.claim_and_read = self._claim_and_read() if self.several_at_once else None
        self.compiler = ops.compiler("SQLCompiler")(Query(WorkflowInstance), connection,
                                                     connection.alias)
        self.converters = self.compiler.get_converters(
            [field.get_col(meta.db_table) for field in self.fields])
        self.sets: dict[tuple[str, ...], str] = {}  # SET clauses by column names
        events = WorkflowEvent._meta
        self.event_fields: list[Field[Any, Any]] = [
            f for f in events.concrete_fields if not f.primary_key]
        self.insert_events = (
            f"INSERT INTO {qn(events.db_table)} "
            f"({', '.join(qn(field.column) for field in self.event_fields)}) VALUES ")
        self.event_values = f"({', '.join(['%s'] * len(self.event_fields))})"
        self.returning = f" RETURNING {qn(events.pk.column)}"
        self.can_return = connection.features.can_return_rows_from_bulk_insert
        # PostgreSQL takes a batch of events as one JSON parameter: binding a dozen
        # parameters per event cost more of a worker's CPU than anything else it sent.
        self.events_as_json = connection.vendor == "postgresql"
        event_columns = ", ".join(qn(field.column) for field in self.event_fields)
        typed = ", ".join(f"{qn(field.column)} {field.db_type(connection)}"
                          for field in self.event_fields)
        self.insert_events_json = (
            f"INSERT INTO {qn(events.db_table)} ({event_columns}) SELECT {event_columns} "
            f"FROM jsonb_to_recordset(%s::jsonb) AS dwf_event({typed}){self.returning}")
        # The parts of write_if_unchanged's statement.
        self.select_unchanged = (f"SELECT {self.pk_column} FROM {self.table} WHERE "
                                 f"{self.where_pk} AND {qn(meta.get_field('revision').column)}"
                                 f" = %s FOR UPDATE SKIP LOCKED")
        self.insert_events_if_written = (
            f", dwf_events AS (INSERT INTO {qn(events.db_table)} ({event_columns}) "
            f"SELECT {event_columns} FROM jsonb_to_recordset(%s::jsonb) AS dwf_event({typed}) "
            f"WHERE {WRITTEN} RETURNING {qn(events.pk.column)}, "
            f"{qn(events.get_field('sequence').column)})")
        self.and_events = " UNION ALL SELECT * FROM dwf_events"

    def _claim_and_read(self) -> str:
        """A worker's claim of a queued attempt, with its own timeout reckoned from its row,
        and the read of its instance: two statements for one round trip (PostgreSQL)."""
        qn, attempts = self.connection.ops.quote_name, Attempt._meta

        def column(name: str) -> str:
            quoted: str = qn(cast("Field[Any, Any]", attempts.get_field(name)).column)
            return quoted

        table = qn(attempts.db_table)
        timeout = column("timeout")
        return (f"UPDATE {table} SET {column('status')} = %s, {column('claimed_at')} = %s, "
                f"{column('heartbeat_at')} = %s, {column('worker')} = %s, "
                f"{column('live_status')} = %s, {column('timeout_at')} = CASE WHEN "
                f"{timeout} <> 0 THEN %s::timestamptz + {timeout} * interval '1 second' END "
                f"WHERE {column('token')} = %s AND {column('status')} = %s; "
                f"{self.select_columns} WHERE {self.pk_column} = "
                f"(SELECT {column('instance')} FROM {table} WHERE {column('token')} = %s)")

    def claim(self, params: list[Any]) -> tuple[bool, WorkflowInstance | None]:
        """Run ``claim_and_read`` (its parameters in order): whether the attempt was still
        queued, and its instance as committed."""
        assert self.claim_and_read is not None
        with self.connection.cursor() as cursor:
            cursor.execute(self.claim_and_read, params)
            claimed = cursor.rowcount == 1
            cursor.nextset()
            return claimed, self.row_of(cursor.fetchall())

    def pk_value(self, value: Any) -> Any:
        return self.pk.get_db_prep_value(self.pk.to_python(value), self.connection)

    def locked(self, pk: Any, *, root: bool = False, within: float | None = None
               ) -> WorkflowInstance | None:
        """The row ``pk`` (only if it has no parent, with ``root``), locked for update.

        ``within``: seconds to wait for the lock, where the statement itself can say
        so (MariaDB); elsewhere the caller's ``bounded_wait`` bounds the wait.
        """
        wait = (f" WAIT {int(whole_seconds(within))}"
                if within is not None and self.waits_in_statement else "")
        sql = (self.select_root if root else self.select) + wait
        with self.connection.cursor() as cursor:
            cursor.execute(sql, [self.pk_value(pk)])
            return self.row_of(cursor.fetchall())

    def row(self, pk: Any) -> WorkflowInstance | None:
        """The row ``pk`` as committed, without a lock (a worker's claim reads its work)."""
        with self.connection.cursor() as cursor:
            cursor.execute(self.read, [self.pk_value(pk)])
            return self.row_of(cursor.fetchall())

    def locked_root_of(self, pk: Any, *, within: float | None = None
                       ) -> WorkflowInstance | None:
        """The root of ``pk``'s tree, locked for update; no other row of it is locked.

        MariaDB and MySQL only (``finds_root_unlocked``). None when ``pk`` is no
        instance. ``within`` as for :meth:`locked`.
        """
        assert self.select_root_of is not None
        wait = (f" WAIT {int(whole_seconds(within))}"
                if within is not None and self.waits_in_statement else "")
        with self.connection.cursor() as cursor:
            cursor.execute(self.select_root_of + wait, [self.pk_value(pk)])
            return self.row_of(cursor.fetchall())

    def locked_root_within(self, pk: Any, seconds: float) -> WorkflowInstance | None:
        """``locked(pk, root=True)``, waiting at most ``seconds`` for the lock, in one round trip.

        Only where ``bounded_root`` is set (PostgreSQL); the lock_timeout is as it
        was afterwards, as with :func:`~django_workflows.services.locking.bounded_wait`.
        """
        assert self.bounded_root is not None
        with self.connection.cursor() as cursor:
            cursor.execute(self.bounded_root, [f"{max(int(seconds * 1000), 1)}ms",
                                               self.pk_value(pk)])
            cursor.nextset()
            cursor.nextset()
            return self.row_of(cursor.fetchall())

    def row_of(self, rows: Iterable[Sequence[Any]]) -> WorkflowInstance | None:
        """The instance a query of ``select_columns`` fetched (None: no row)."""
        if not rows:
            return None
        if self.converters:
            rows = self.compiler.apply_converters(rows, self.converters)
        values = list(next(iter(rows)))
        return WorkflowInstance.from_db(self.connection.alias, self.attnames, values)

    def update(self, row: WorkflowInstance, names: Sequence[str]) -> None:
        """``UPDATE`` the columns ``names`` of ``row``, as ``save(update_fields=...)`` would."""
        self.write([(row, names)], [])

    def update_of(self, row: WorkflowInstance, names: Sequence[str]) -> tuple[str, list[Any]]:
        """The ``UPDATE`` of the columns ``names`` of ``row`` and its parameters."""
        sets, params = self._sets(row, names)
        return (f"UPDATE {self.table} SET {sets} WHERE {self.where_pk}",
                [*params, self.pk.get_db_prep_value(row.pk, self.connection)])

    def _sets(self, row: WorkflowInstance, names: Sequence[str]) -> tuple[str, list[Any]]:
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
              events: list[WorkflowEvent], also: Sequence[tuple[str, list[Any]]] = ()) -> None:
        """The ``UPDATE`` of each instance's changed columns (a row and their names),
        ``also`` (other rows' statements, such as the attempt's), then the events' ``INSERT``.

        Where several statements go at once (PostgreSQL with client-side binding), they
        are one round trip.
        """
        updates = [self.update_of(row, names) for row, names in changed]
        inserts = self._inserts(events)
        together = [*updates, *also, *((sql, params) for sql, params, _ in inserts)]
        with self.connection.cursor() as cursor:
            if not (self.several_at_once and len(inserts) <= 1 and len(together) > 1):
                for sql, params in updates:
                    cursor.execute(sql, params)
                    self._updated_one(cursor)
                for sql, params in also:
                    cursor.execute(sql, params)
                self._insert(cursor, events, inserts)
                return
            cursor.execute("; ".join(sql for sql, _ in together),
                           [param for _, params in together for param in params])
            for _ in updates:
                self._updated_one(cursor)
                cursor.nextset()
            for _ in also:
                cursor.nextset()
            if inserts:
                self._keys(events, cursor.fetchall())

    def write_if_unchanged(self, row: WorkflowInstance, names: Sequence[str], revision: int,
                           events: list[WorkflowEvent],
                           also: Sequence[tuple[str, list[Any]]] = ()) -> bool:
        """:meth:`write` of one instance, only if its row is still at ``revision`` and
        no other transaction holds its lock; whether it was written.

        One statement, so one round trip and one transaction, without ``BEGIN`` and
        without waiting for the lock: the row is locked (``SKIP LOCKED``) and checked
        first, and every other write of the statement happens only if it was. Each of
        ``also`` must end with its ``WHERE`` clause and write other rows than the
        instance's (a statement writes a row once). PostgreSQL only
        (``writes_if_unchanged``): other databases have no writes in ``WITH``.
        """
        assert self.writes_if_unchanged
        sets, params = self._sets(row, names)
        # Each other write is its own part of the WITH, done only if the instance's was
        # (int(): what the SQL check in tests/reliability takes for a number).
        others = "".join(f", dwf_also_{int(number)} AS ({sql} AND {WRITTEN})"
                         for number, (sql, _) in enumerate(also))
        statement = (f"WITH dwf_fence AS ({self.select_unchanged}), "
                     f"dwf_instance AS (UPDATE {self.table} SET {sets} WHERE "
                     f"{self.pk_column} = (SELECT {self.pk_column} FROM dwf_fence) "
                     f"RETURNING 1){others}{self.insert_events_if_written if events else ''} "
                     f"SELECT NULL, NULL FROM dwf_instance{self.and_events if events else ''}")
        values = [self.pk_value(row.pk), revision, *params,
                  *(value for _, its_values in also for value in its_values)]
        if events:
            values.append(self._json_rows(events))
        with self.connection.cursor() as cursor:
            cursor.execute(statement, values)
            rows = cursor.fetchall()
        if not rows:
            return False
        by_sequence = {sequence: (key,) for key, sequence in rows if key is not None}
        self._keys(events, [by_sequence[event.sequence] for event in events])
        return True

    @staticmethod
    def _updated_one(cursor: Any) -> None:
        if cursor.rowcount != 1:
            raise WorkflowInstance.DoesNotExist("A workflow instance to update is gone")

    def batch_size(self, events: list[WorkflowEvent]) -> int:
        """Events per ``INSERT``: what the database takes, and at most 1,000."""
        taken: int = self.connection.ops.bulk_batch_size(self.event_fields, events)
        return max(min(taken, MAX_BATCH), 1)

    def insert(self, events: list[WorkflowEvent]) -> None:
        """Insert event rows in one statement (per batch), setting their primary keys."""
        with self.connection.cursor() as cursor:
            self._insert(cursor, events, self._inserts(events))

    def _insert(self, cursor: Any, events: list[WorkflowEvent],
                inserts: list[tuple[str, list[Any], list[WorkflowEvent]]]) -> None:
        if events and not self.can_return:
            WorkflowEvent.objects.bulk_create(events)
        for sql, params, batch in inserts:
            cursor.execute(sql, params)
            self._keys(batch, cursor.fetchall())

    def _inserts(self, events: list[WorkflowEvent]
                 ) -> list[tuple[str, list[Any], list[WorkflowEvent]]]:
        """The events' ``INSERT`` statements, a batch each: SQL, parameters, the batch.
        None where the database cannot return their keys (``bulk_create`` inserts them)."""
        if not events or not self.can_return:
            return []
        size = MAX_BATCH if self.events_as_json else self.batch_size(events)
        inserts = []
        for start in range(0, len(events), size):
            batch = events[start:start + size]
            if self.events_as_json:
                inserts.append((self.insert_events_json, [self._json_rows(batch)], batch))
            else:
                inserts.append((self.insert_events + ", ".join([self.event_values] * len(batch))
                                + self.returning, self._insert_params(batch), batch))
        return inserts

    def _json_rows(self, batch: list[WorkflowEvent]) -> str:
        """The batch as the JSON array ``insert_events_json`` takes. Its fields are plain
        (numbers, text, keys, a time, JSON): their values need no preparing but this."""
        fields = [(field.column, field.attname) for field in self.event_fields]
        return json.dumps([{column: _json_scalar(getattr(event, attname))
                            for column, attname in fields} for event in batch])

    def _insert_params(self, batch: list[WorkflowEvent]) -> list[Any]:
        return [field.get_db_prep_save(field.pre_save(event, True), self.connection)
                for event in batch for field in self.event_fields]

    def _keys(self, batch: list[WorkflowEvent], keys: Sequence[Sequence[Any]]) -> None:
        for event, (key,) in zip(batch, keys, strict=True):
            event.pk = key
            event._state.adding = False
            event._state.db = self.connection.alias


def _json_scalar(value: Any) -> Any:
    """A value as PostgreSQL reads it back from JSON text (JSON values stay as they are)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


def whole_seconds(seconds: float) -> int:
    """A lock wait for MariaDB/MySQL, which count whole seconds: rounded up, at least 1."""
    return max(math.ceil(seconds), 1)


def _is_mariadb(connection: Any) -> bool:
    """MariaDB rather than MySQL (both are Django's vendor ``mysql``), asked of the server."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        return "mariadb" in cursor.fetchone()[0].lower()


def _several_statements_at_once(connection: Any) -> bool:
    """PostgreSQL through psycopg 3 with client-side binding: several results per execute."""
    if connection.vendor != "postgresql":
        return False
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return is_psycopg3 and connection.settings_dict["OPTIONS"].get(
        "server_side_binding") is not True


def on_connection(alias: str, attribute: str, build: Callable[[Any], T]) -> T:
    """What ``build(connection)`` makes for this thread's connection ``alias``, built on
    its first use.

    It lives on the connection object, and goes with it (a weak-keyed cache
    would keep every thread's connection alive: what is built refers to it).
    """
    connection = connections[alias]
    built: T | None = getattr(connection, attribute, None)
    if built is None:
        built = build(connection)
        setattr(connection, attribute, built)
    return built


def statements(alias: str = DEFAULT_DB_ALIAS) -> Statements:
    """The statements of this thread's connection ``alias``, built on its first use."""
    return on_connection(alias, ATTRIBUTE, Statements)
