"""MariaDB and MySQL (InnoDB): the root of a tree found without locking, and lock waits
counted in whole seconds.

InnoDB locks every row a locking read looks at, even one its ``WHERE`` then
refuses: reading ``... AND parent IS NULL FOR UPDATE`` would lock a child before
its root. Here the root is found by reading up the parents in a recursive CTE,
and only the root is locked, in one statement: ``FOR UPDATE`` does not lock what
its subqueries read (MySQL documents it; MariaDB does the same, and
``tests/services/test_locking.py`` holds it to that).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from ...models import WorkflowInstance
from .generic import Statements

# The error numbers of a row lock not granted in time: 1205 (a wait that timed out, and
# MariaDB's NOWAIT) and 3572 (MySQL 8's NOWAIT). Never 1213, a deadlock: our lock order
# rules it out, and it is reported as the bug it would be.
INNODB_LOCK_NOT_GRANTED = (1205, 3572)


def whole_seconds(seconds: float) -> int:
    """A lock wait as InnoDB counts it: whole seconds, rounded up, at least 1."""
    return max(math.ceil(seconds), 1)


class MySQL(Statements):
    """MySQL 8: a wait is bounded by the session's ``innodb_lock_wait_timeout``."""

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self.read_root_of = (
            f"WITH RECURSIVE dwf_up (node, parent) AS ("
            f"SELECT {self.pk_column}, {self.parent_column} FROM {self.table} "
            f"WHERE {self.where_pk} UNION SELECT dwf_row.{self.pk_column}, "
            f"dwf_row.{self.parent_column} FROM {self.table} AS dwf_row "
            f"JOIN dwf_up ON dwf_row.{self.pk_column} = dwf_up.parent) "
            f"{self.select_columns} WHERE {self.pk_column} = "
            "(SELECT node FROM dwf_up WHERE parent IS NULL)")

    @contextmanager
    def bounded_wait(self, seconds: float) -> Iterator[None]:
        """The session's wait in whole seconds (rounded up), put back afterwards, also
        after an error: unlike PostgreSQL's, the setting outlives the transaction."""
        with self.connection.cursor() as cursor:
            # Kept in Python, not in a session variable, so that bounded waits can nest.
            cursor.execute("SELECT @@SESSION.innodb_lock_wait_timeout")
            previous = cursor.fetchone()[0]
            cursor.execute("SET SESSION innodb_lock_wait_timeout = %s", [whole_seconds(seconds)])
        try:
            yield
        finally:
            with self.connection.cursor() as cursor:
                cursor.execute("SET SESSION innodb_lock_wait_timeout = %s", [previous])

    def is_lock_timeout(self, error: BaseException) -> bool:
        # MySQLdb's errors carry the server's error number first.
        number = getattr(error.__cause__, "args", (None,))[:1]
        return bool(number) and number[0] in INNODB_LOCK_NOT_GRANTED

    def lock_root_of(self, instance_id: UUID | str, within: float) -> WorkflowInstance:
        root = self.fetch(self.read_root_of + self.lock_clause(within),
                          [self.pk_value(instance_id)])
        if root is None:  # no instance (InstanceNotFound), or parents in a loop
            root = self.locked_or_missing(self.root_id(instance_id), within)
        return root


class MariaDB(MySQL):
    """MariaDB bounds each lock wait in its statement (``FOR UPDATE WAIT n``)."""

    def lock_clause(self, within: float | None) -> str:
        wait = f" WAIT {int(whole_seconds(within))}" if within is not None else ""
        return f" FOR UPDATE{wait}"

    def lock_tree(self, instance_id: UUID | str, timeout: float) -> list[WorkflowInstance]:
        # Each locking read says how long it waits: no session setting to set and put back.
        return self.chain_from(self.lock_root_of(instance_id, timeout), instance_id, timeout)


def is_mariadb(connection: Any) -> bool:
    """MariaDB rather than MySQL (both are Django's vendor ``mysql``), asked of the server."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        return "mariadb" in cursor.fetchone()[0].lower()
