"""The attempt rows' SQL for one database connection, built once (as the instances' is).

A worker's claim is one fenced ``UPDATE`` of the attempt's row (queued ->
running), committed at once, and a read of its instance for the work to run:
here the attempt is read first (for its instance and its own timeout), then
claimed, then its instance read. PostgreSQL does it in one round trip
(``postgresql.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, cast

from django.db.models import Field

from ...clock import to_datetime
from ...models import Attempt, AttemptStatus, WorkflowInstance

Statement = tuple[str, list[Any]]  # SQL and its parameters


class InstanceStatements(Protocol):
    """What the attempts' SQL needs of the instances' (``generic.Statements``)."""

    connection: Any

    def row(self, pk: Any) -> WorkflowInstance | None: ...


def field_of(name: str) -> Field[Any, Any]:
    """``Attempt``'s concrete field ``name`` (``get_field`` is typed to return relations too)."""
    return cast("Field[Any, Any]", Attempt._meta.get_field(name))


class Claim(NamedTuple):
    """A claim's answer: whether the attempt was still queued, its instance as committed
    (None when the attempt or its instance is gone), the attempt's ``enqueued_at``
    and ``trace_context`` when the claim read them on its way (PostgreSQL; None: it did
    not, and observers that want them read the row), and the key of its ``Limit``, as
    it was handed out ("" for none): its end gives that key's slot on."""

    claimed: bool
    row: WorkflowInstance | None
    stored: tuple[Any, Any] | None = None
    limit_key: str = ""


class AttemptStatements:
    """The attempt's SQL for the connection of ``instances``."""

    def __init__(self, instances: InstanceStatements) -> None:
        self.instances = instances
        self.connection = instances.connection
        self.table = self.connection.ops.quote_name(Attempt._meta.db_table)
        self.where_token = f"{self.column('token')} = %s"
        self.update_sql: dict[tuple[Any, ...], str] = {}
        self.read_attempt = (f"SELECT {self.column('instance')}, {self.column('timeout')}, "
                             f"{self.column('limit_key')} "
                             f"FROM {self.table} WHERE {self.where_token}")

    def column(self, name: str) -> str:
        """The quoted column of the attempt's concrete field ``name``."""
        quoted: str = self.connection.ops.quote_name(cast(str, field_of(name).column))
        return quoted

    def claim(self, token: str, at: float, heartbeat_at: Any, worker: str) -> Claim:
        """Claim the queued attempt ``token`` (:class:`Claim` says what came of it)."""
        with self.connection.cursor() as cursor:
            cursor.execute(self.read_attempt, [token])
            found = cursor.fetchone()
        if found is None:
            return Claim(False, None)
        instance_id, timeout, limit_key = found
        claimed_at = to_datetime(at)
        changed = self.changed_by(self.update_of(token, {
            "status": AttemptStatus.RUNNING, "claimed_at": claimed_at,
            "heartbeat_at": heartbeat_at, "worker": worker, "live_status": "running",
            "timeout_at": to_datetime(at + timeout) if timeout else None,
        }, only_if=AttemptStatus.QUEUED))
        if not changed:
            return Claim(False, None)
        return Claim(True, self.instances.row(instance_id), limit_key=limit_key)

    def update_of(self, token: str, values: Mapping[str, Any], *, only_if: str | None = None,
                  finished_unless_stopped: bool = False) -> Statement:
        """The ``UPDATE`` of one attempt's row that ``filter(token=...).update(values)``
        would send, and its parameters.

        ``only_if``: only while its status is this one (the fence of a claim). With
        ``finished_unless_stopped``, its status becomes finished, or dropped if it
        was told to stop.
        """
        key = (*values, only_if is not None, finished_unless_stopped)
        sql = self.update_sql.get(key)
        if sql is None:
            sets = ", ".join(f"{self.column(name)} = %s" for name in values)
            stopped = (f", {self.column('status')} = CASE WHEN {self.column('stop_reason')} "
                       "= %s THEN %s ELSE %s END" if finished_unless_stopped else "")
            fence = f" AND {self.column('status')} = %s" if only_if is not None else ""
            sql = self.update_sql[key] = (f"UPDATE {self.table} SET {sets}{stopped} "
                                       f"WHERE {self.where_token}{fence}")
        params = [field_of(name).get_db_prep_save(value, self.connection)
                  for name, value in values.items()]
        if finished_unless_stopped:
            params += ["", AttemptStatus.FINISHED.value, AttemptStatus.DROPPED.value]
        params.append(token)
        if only_if is not None:
            params.append(only_if)
        return sql, params

    def changed_by(self, statement: Statement) -> int:
        """Run one statement of :meth:`update_of`; the number of rows it changed."""
        sql, params = statement
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            changed: int = cursor.rowcount
            return changed
