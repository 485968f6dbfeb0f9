"""PostgreSQL: a lock wait bounded by the transaction's ``lock_timeout``, events sent as one
JSON parameter, and an instance written in one statement if it is as it was read.

:class:`PostgreSQL` works through any driver. Through psycopg 3 with client-side
binding (Django's default) several statements go in one round trip, and
:class:`PsycopgClientBinding` uses that for the hot path: a root locked with its
bounded wait, an instance's update with its events, a worker's claim with the
read of its instance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any
from uuid import UUID

from ...clock import to_datetime
from ...conf import workflow_settings
from ...models import AttemptStatus, WorkflowEvent, WorkflowInstance
from .attempts import AttemptStatements, Claim, Statement
from .generic import MAX_BATCH, EventRow, Insert, Statements

LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for lock_timeout
SAVED_LOCK_TIMEOUT = "django_workflows.lock_timeout"  # a transaction-local placeholder setting
WRITTEN = "EXISTS (SELECT FROM dwf_instance)"  # in write_if_unchanged: the instance was


def milliseconds(seconds: float) -> str:
    return f"{max(int(seconds * 1000), 1)}ms"


class PostgreSQL(Statements):
    writes_if_unchanged = True

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self._kept: Any = None  # the cursor hot_cursor() uses again
        qn = connection.ops.quote_name
        typed = ", ".join(f"{qn(field.column)} {field.db_type(connection)}"
                          for field in self.event_fields)
        # A batch of events is one JSON parameter: binding a dozen parameters per event
        # cost more of a worker's CPU than anything else it sent.
        self.events_from_json = (f"SELECT {self.event_columns} FROM jsonb_to_recordset("
                                 f"%s::jsonb) AS dwf_event({typed})")
        self.event_columns_and_attnames = [(field.column, field.attname)
                                           for field in self.event_fields]
        self.insert_events_json = (f"INSERT INTO {self.events_table} ({self.event_columns}) "
                                   f"{self.events_from_json}{self.returning}")
        # The parts of write_if_unchanged's statement.
        revision = qn(WorkflowInstance._meta.get_field("revision").column)
        self.select_unchanged = (f"SELECT {self.pk_column} FROM {self.table} WHERE "
                                 f"{self.where_pk} AND {revision} = %s FOR UPDATE SKIP LOCKED")
        sequence = qn(WorkflowEvent._meta.get_field("sequence").column)
        self.insert_events_if_written = (
            f", dwf_events AS (INSERT INTO {self.events_table} ({self.event_columns}) "
            f"{self.events_from_json} WHERE {WRITTEN} "
            f"RETURNING {qn(WorkflowEvent._meta.pk.column)}, {sequence})")

    def hot_cursor(self) -> Any:
        """A cursor for the hot path's statements, as a ``with`` block takes it: one kept
        per connection and used again, since making Django's cursor and the driver's cost
        a worker's operation nearly 4 % of its instructions. Each use must read all its results
        before another statement runs.

        A new one is made where ``connection.cursor()`` does more than make one: when
        queries are logged (``DEBUG``, ``assertNumQueries``), when the driver's
        connection is a new one, and before a health check (``CONN_HEALTH_CHECKS``).
        """
        connection, kept = self.connection, self._kept
        if kept is None or connection.queries_logged \
                or kept.cursor.connection is not connection.connection \
                or (connection.health_check_enabled and not connection.health_check_done):
            kept = connection.cursor()
            self._kept = None if connection.queries_logged else kept
        return nullcontext(kept)

    @contextmanager
    def bounded_wait(self, seconds: float) -> Iterator[None]:
        """``lock_timeout``, local to the transaction, and put back as it was afterwards
        (bounded waits may nest)."""
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('lock_timeout'), "
                           "set_config('lock_timeout', %s, true)", [milliseconds(seconds)])
            previous = cursor.fetchone()[0]
        yield
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])

    def send(self, cursor: Any, statements: Sequence[Statement]) -> None:
        """Run one statement (a driver that takes several at once runs them all, in one
        round trip: :class:`PsycopgClientBinding`)."""
        (sql, params), = statements
        cursor.execute(sql, params)

    def is_lock_timeout(self, error: BaseException) -> bool:
        cause = error.__cause__
        return (getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
                ) == LOCK_NOT_AVAILABLE

    def inserts(self, events: Sequence[EventRow]) -> list[Insert]:
        return [(self.insert_events_json, [self.json_rows(batch)], batch)
                for batch in (events[start:start + MAX_BATCH]
                              for start in range(0, len(events), MAX_BATCH))]

    def json_rows(self, batch: Sequence[EventRow]) -> str:
        """The batch as the JSON array ``events_from_json`` takes. Its fields are plain
        (numbers, text, keys, a time, JSON): their values need no preparing but this."""
        fields = self.event_columns_and_attnames
        return json.dumps([{column: getattr(event, attname) for column, attname in fields}
                           for event in batch], default=json_scalar)

    def write_if_unchanged(self, row: WorkflowInstance, names: Sequence[str], revision: int,
                           events: Sequence[EventRow], also: Sequence[Statement] = ()
                           ) -> bool:
        """:meth:`write` of one instance, only if its row is still at ``revision`` and
        no other transaction holds its lock; whether it was written.

        One statement, so one round trip and one transaction, without ``BEGIN`` and
        without waiting for the lock: the row is locked (``SKIP LOCKED``) and checked
        first, and every other write of the statement happens only if it was. Each of
        ``also`` must end with its ``WHERE`` clause and write other rows than the
        instance's (a statement writes a row once).
        """
        sets, params = self.sets_of(row, names)
        # Each other write is its own part of the WITH, done only if the instance's was
        # (int(): what the SQL check in tests/reliability takes for a number).
        others = "".join(f", dwf_also_{int(number)} AS ({sql} AND {WRITTEN})"
                         for number, (sql, _) in enumerate(also))
        statement = (f"WITH dwf_fence AS ({self.select_unchanged}), "
                     f"dwf_instance AS (UPDATE {self.table} SET {sets} WHERE "
                     f"{self.pk_column} = (SELECT {self.pk_column} FROM dwf_fence) "
                     f"RETURNING 1){others}{self.insert_events_if_written if events else ''} "
                     f"SELECT NULL, NULL FROM dwf_instance"
                     f"{' UNION ALL SELECT * FROM dwf_events' if events else ''}")
        values = [self.pk_value(row.pk), revision, *params,
                  *(value for _, its_values in also for value in its_values)]
        if events:
            values.append(self.json_rows(events))
        with self.hot_cursor() as cursor:
            self.send(cursor, [(statement, values)])
            rows = cursor.fetchall()
        if not rows:
            return False
        by_sequence = {sequence: (key,) for key, sequence in rows if key is not None}
        self.keys(events, [by_sequence[event.sequence] for event in events])
        return True


def json_scalar(value: Any) -> Any:
    """What ``json.dumps`` cannot write itself (its ``default``), as PostgreSQL reads it
    back from JSON text: a time, a key."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


class PsycopgClientBindingAttempts(AttemptStatements):
    """A claim and the read of its instance in one round trip: one implicit transaction,
    whose read comes after the ``UPDATE`` and so sees every command that committed
    before the claim; the attempt's own timeout is reckoned from its row."""

    def __init__(self, instances: Statements) -> None:
        super().__init__(instances)
        column, table = self.column, self.table
        timeout = column("timeout")
        self.claim_update = (
            f"UPDATE {table} SET {column('status')} = %s, {column('claimed_at')} = %s, "
            f"{column('heartbeat_at')} = %s, {column('worker')} = %s, "
            f"{column('live_status')} = %s, {column('timeout_at')} = CASE WHEN "
            f"{timeout} <> 0 THEN %s::timestamptz + {timeout} * interval '1 second' END "
            f"WHERE {self.where_token} AND {column('status')} = %s "
            # For observers (observability/), and the key whose slot its end gives on: read
            # on the way, not in a round trip of its own.
            f"RETURNING {column('enqueued_at')}, {column('trace_context')}, "
            f"{column('limit_key')}")
        self.claimed_instance = (
            f"{instances.select_columns} WHERE {instances.pk_column} = "
            f"(SELECT {column('instance')} FROM {table} WHERE {self.where_token})")

    def claim(self, token: str, at: float, heartbeat_at: Any, worker: str) -> Claim:
        claimed_at = to_datetime(at)
        assert isinstance(self.instances, PostgreSQL)
        with self.instances.hot_cursor() as cursor:
            self.instances.send(cursor, [
                (self.claim_update, [AttemptStatus.RUNNING.value, claimed_at, heartbeat_at,
                                     worker, "running", claimed_at, token,
                                     AttemptStatus.QUEUED.value]),
                (self.claimed_instance, [token])])
            claimed = cursor.rowcount == 1
            returned = cursor.fetchone() if claimed else None
            cursor.nextset()
            stored = None if returned is None else (
                returned[0], json.loads(returned[1]) if isinstance(returned[1], str)
                else returned[1])  # jsonb as text: Django's loader, for JSONField
            return Claim(claimed, self.instances.reader.first(cursor.fetchall()), stored,
                         returned[2] if returned is not None else "")


class PsycopgClientBinding(PostgreSQL):
    """psycopg 3 with client-side binding: several statements in one round trip."""

    attempts_class = PsycopgClientBindingAttempts

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        # Keep the lock_timeout, set it, lock the root, put the lock_timeout back.
        self.bounded_root = [
            f"SELECT set_config('{SAVED_LOCK_TIMEOUT}', current_setting('lock_timeout'), true)",
            "SELECT set_config('lock_timeout', %s, true)",
            f"{self.read_root}{self.lock_clause(None)}",
            f"SELECT set_config('lock_timeout', current_setting('{SAVED_LOCK_TIMEOUT}'), true)"]
        self.prepared = PreparedStatements(connection)

    def send(self, cursor: Any, statements: Sequence[Statement]) -> None:
        """Run the statements in one round trip, each as a prepared statement of this
        connection where the settings allow (``PREPARED_STATEMENTS``). Their results come
        one after another (``cursor.nextset()``)."""
        sqls = [sql for sql, _ in statements]
        if workflow_settings.PREPARED_STATEMENTS:
            sqls = self.prepared.executes(cursor, sqls)
        cursor.execute("; ".join(sqls), [param for _, params in statements
                                         for param in params])

    def fetch(self, sql: str, params: list[Any]) -> WorkflowInstance | None:
        with self.hot_cursor() as cursor:
            self.send(cursor, [(sql, params)])  # prepared: a command's read is on the hot path
            return self.reader.first(cursor.fetchall())

    def lock_tree(self, instance_id: UUID | str, timeout: float) -> list[WorkflowInstance]:
        # The common case, an instance without a parent, is one round trip with its wait.
        with self.hot_cursor() as cursor:
            first, bound, lock, restore = self.bounded_root
            self.send(cursor, [(first, []), (bound, [milliseconds(timeout)]),
                               (lock, [self.pk_value(instance_id)]), (restore, [])])
            cursor.nextset()
            cursor.nextset()
            root = self.reader.first(cursor.fetchall())
        if root is not None and not root.nested_id:
            return [root]
        with self.bounded_wait(timeout):
            if root is None:
                root = self.locked_or_missing(self.root_id(instance_id))
            return self.chain_from(root, instance_id)

    def write(self, changed: Sequence[tuple[WorkflowInstance, Sequence[str]]],
              events: Sequence[EventRow], also: Sequence[Statement] = ()) -> None:
        updates = [self.update_of(row, names) for row, names in changed]
        inserts = self.inserts(events)
        together = [*updates, *also, *((sql, params) for sql, params, _ in inserts)]
        if len(inserts) > 1 or len(together) < 2:
            super().write(changed, events, also)
            return
        with self.hot_cursor() as cursor:
            self.send(cursor, together)
            for _ in updates:
                self.updated_one(cursor)
                cursor.nextset()
            for _ in also:
                cursor.nextset()
            if inserts:
                self.keys(events, cursor.fetchall())


class PreparedStatements:
    """The hot statements of one connection as prepared statements: each is ``PREPARE``d
    once (in a round trip of its own, the first time the connection runs it) and then
    ``EXECUTE``d, so PostgreSQL parses and plans it once per connection instead of once per
    call (that was a third of its CPU per worker's operation).

    Prepared statements live as long as the driver's connection: a new one (after a
    reconnect) prepares them again. Each name is used once ever, so one prepared but not
    recorded (an error in the same round trip) never meets another. Poolers that share a
    server connection between clients per transaction (PgBouncer's transaction mode) do
    not keep them: set ``PREPARED_STATEMENTS`` to False there.
    """

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.names: dict[str, str] = {}  # SQL -> the name it is prepared under
        self.executions: dict[str, str] = {}  # SQL -> the EXECUTE that runs it
        self.driver: Any = None  # the driver's connection they were prepared on
        self.made = 0

    def executes(self, cursor: Any, sqls: Sequence[str]) -> list[str]:
        """The ``EXECUTE`` of each statement, preparing those not prepared yet."""
        driver = self.connection.connection
        if driver is not self.driver:
            self.names, self.executions, self.driver = {}, {}, driver
        executions = self.executions
        try:
            return [executions[sql] for sql in sqls]
        except KeyError:
            pass
        missing = [sql for sql in dict.fromkeys(sqls) if sql not in executions]
        names = {}
        for sql in missing:
            self.made += 1
            name = f"dwf_{int(self.made)}"
            names[sql] = name
            executions[sql] = execute_of(name, sql.count("%s"))
        try:
            cursor.execute("; ".join(f"PREPARE {names[sql]} AS {numbered(sql)}"
                                     for sql in missing))
        except BaseException:
            for sql in missing:
                del executions[sql]
            raise
        self.names.update(names)
        return [executions[sql] for sql in sqls]


def numbered(sql: str) -> str:
    """``sql`` with its ``%s`` placeholders numbered as ``PREPARE`` takes them: ``$1``..."""
    parts = sql.split("%s")
    return parts[0] + "".join(f"${int(number)}{part}"
                              for number, part in enumerate(parts[1:], start=1))


def execute_of(name: str, count: int) -> str:
    return f"EXECUTE {name}({', '.join(['%s'] * count)})" if count else f"EXECUTE {name}"
