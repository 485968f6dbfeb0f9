"""The attempt row's hot SQL, built once per connection (as ``statements.py`` builds the
instance's).

A worker's claim is one fenced ``UPDATE`` of the attempt's row (queued ->
running). On PostgreSQL it goes in one round trip with the read of its
instance (``Statements.claim_and_read``): one implicit transaction, whose read
comes after the ``UPDATE`` and so sees every command that committed before
the claim. Elsewhere the attempt is read first (for its instance and its
timeout) and the instance after.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Field

from ..models import Attempt, AttemptStatus, WorkflowInstance
from .persistence import to_datetime
from .statements import on_connection, statements

ATTRIBUTE = "_django_workflows_attempt_statements"  # on the connection


def _field(name: str) -> Field[Any, Any]:
    """``Attempt``'s concrete field ``name`` (``get_field`` is typed to return relations too)."""
    return cast("Field[Any, Any]", Attempt._meta.get_field(name))


class AttemptStatements:
    """The attempt's SQL for one database connection."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.table = connection.ops.quote_name(Attempt._meta.db_table)
        self.where_token = f"{self.column('token')} = %s"
        self.updates: dict[tuple[Any, ...], str] = {}
        timeout = self.column("timeout")
        self.read_attempt = (f"SELECT {self.column('instance')}, {timeout} FROM {self.table} "
                             f"WHERE {self.where_token}")

    def column(self, name: str) -> str:
        """The quoted column of the attempt's concrete field ``name``."""
        quoted: str = self.connection.ops.quote_name(cast(str, _field(name).column))
        return quoted

    def claim(self, token: str, at: float, heartbeat_at: Any, worker: str
              ) -> tuple[bool, WorkflowInstance | None]:
        """Claim the queued attempt ``token``: whether it was still queued, and its instance
        as committed (None when the attempt or its instance is gone)."""
        claimed_at = to_datetime(at)
        instances = statements(self.connection.alias)
        if instances.claim_and_read is not None:
            return instances.claim([AttemptStatus.RUNNING.value, claimed_at, heartbeat_at,
                                    worker, "running", claimed_at, token,
                                    AttemptStatus.QUEUED.value, token])
        with self.connection.cursor() as cursor:
            cursor.execute(self.read_attempt, [token])
            found = cursor.fetchone()
        if found is None:
            return False, None
        instance_id, timeout = found
        changed = self.changed_by(self.update_of(token, {
            "status": AttemptStatus.RUNNING, "claimed_at": claimed_at,
            "heartbeat_at": heartbeat_at, "worker": worker, "live_status": "running",
            "timeout_at": to_datetime(at + timeout) if timeout else None,
        }, only_if=AttemptStatus.QUEUED))
        if not changed:
            return False, None
        return True, instances.row(instance_id)

    def update_of(self, token: str, values: Mapping[str, Any], *, only_if: str | None = None,
                  finished_unless_stopped: bool = False) -> tuple[str, list[Any]]:
        """The ``UPDATE`` of one attempt's row that ``filter(token=...).update(values)``
        would send, and its parameters.

        ``only_if``: only while its status is this one (the fence of a claim). With
        ``finished_unless_stopped``, its status becomes finished, or dropped if it
        was told to stop.
        """
        key = (*values, only_if is not None, finished_unless_stopped)
        sql = self.updates.get(key)
        if sql is None:
            sets = ", ".join(f"{self.column(name)} = %s" for name in values)
            stopped = (f", {self.column('status')} = CASE WHEN {self.column('stop_reason')} "
                       "= %s THEN %s ELSE %s END" if finished_unless_stopped else "")
            fence = f" AND {self.column('status')} = %s" if only_if is not None else ""
            sql = self.updates[key] = (f"UPDATE {self.table} SET {sets}{stopped} "
                                       f"WHERE {self.where_token}{fence}")
        params = [_field(name).get_db_prep_save(value, self.connection)
                  for name, value in values.items()]
        if finished_unless_stopped:
            params += ["", AttemptStatus.FINISHED.value, AttemptStatus.DROPPED.value]
        params.append(token)
        if only_if is not None:
            params.append(only_if)
        return sql, params

    def changed_by(self, statement: tuple[str, list[Any]]) -> int:
        """Run one statement of :meth:`update_of`; the number of rows it changed."""
        sql, params = statement
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            changed: int = cursor.rowcount
            return changed


def attempt_statements(alias: str = DEFAULT_DB_ALIAS) -> AttemptStatements:
    """The attempt statements of this thread's connection ``alias``, built on first use."""
    return on_connection(alias, ATTRIBUTE, AttemptStatements)
