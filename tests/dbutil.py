"""Database facts for tests, usable without fixtures (in skip conditions, helpers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections, transaction
from django.db.models import Model

# Seconds between looks at the lock waits: InnoDB refreshes its view of them (innodb_trx)
# only when nobody read it for 0.1 s, so polling faster sees the first answer for ever.
LOCK_WAIT_POLL = 0.2
# Database servers with real row locks: a lock waits, times out, and is taken in order.
REAL_LOCK_VENDORS = ("postgresql", "mysql")


def is_postgres() -> bool:
    """True when the default database is PostgreSQL."""
    return connection.vendor == "postgresql"


def is_mysql() -> bool:
    """True when the default database is MariaDB or MySQL (Django's vendor ``mysql``)."""
    return connection.vendor == "mysql"


def is_sqlite() -> bool:
    """True when the default database is SQLite."""
    return connection.vendor == "sqlite"


def has_real_locks() -> bool:
    """True when the default database has real row locks (PostgreSQL, MariaDB, MySQL)."""
    return connection.vendor in REAL_LOCK_VENDORS


def server_name() -> str:
    """What the default database server is called in messages."""
    return {"postgresql": "PostgreSQL", "mysql": "MariaDB/MySQL"}.get(connection.vendor,
                                                                     connection.vendor)


def unreachable_reason() -> str | None:
    """Why the configured database server cannot be reached, or None when it answers.

    None for SQLite, which is a file. Connects with the configured database first and
    falls back to the server's maintenance database (PostgreSQL) or to no database
    (MariaDB/MySQL), as Django does when it creates the test database.
    """
    if connection.vendor == "postgresql":
        return postgres_unreachable_reason()
    if connection.vendor == "mysql":
        return mysql_unreachable_reason()
    return None


def postgres_unreachable_reason() -> str | None:
    """Why the configured PostgreSQL server cannot be reached, or None when it answers."""
    import psycopg

    settings = connection.settings_dict
    params = {
        "host": settings.get("HOST") or None,
        "port": settings.get("PORT") or None,
        "user": settings.get("USER") or None,
        "password": settings.get("PASSWORD") or None,
        "connect_timeout": 3,
    }
    first_error: Exception | None = None
    for dbname in (settings.get("NAME") or "postgres", "postgres"):
        try:
            psycopg.connect(dbname=dbname, **params).close()
        except psycopg.Error as error:
            first_error = first_error or error
        else:
            return None
    return f"{first_error}".strip() or type(first_error).__name__


def mysql_unreachable_reason() -> str | None:
    """Why the configured MariaDB/MySQL server cannot be reached, or None when it answers."""
    import MySQLdb

    settings = connection.settings_dict
    params: dict[str, object] = {"connect_timeout": 3}
    if settings.get("HOST"):
        params["host"] = settings["HOST"]
    if settings.get("PORT"):
        params["port"] = int(settings["PORT"])
    if settings.get("USER"):
        params["user"] = settings["USER"]
    if settings.get("PASSWORD"):
        params["password"] = settings["PASSWORD"]
    first_error: Exception | None = None
    for database in (settings.get("NAME"), None):
        try:
            MySQLdb.connect(**params, **({"database": database} if database else {})).close()
        except MySQLdb.Error as error:
            first_error = first_error or error
        else:
            return None
    return f"{first_error}".strip() or type(first_error).__name__


def sessions_waiting_for_a_lock() -> int:
    """How many other sessions of this database wait for a row lock right now."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Read afresh: inside a transaction PostgreSQL keeps showing the first reading.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                           "AND datname = current_database() AND pid <> pg_backend_pid()")
        elif connection.vendor == "mysql":
            cursor.execute("SELECT count(*) FROM information_schema.innodb_trx AS trx "
                           "JOIN information_schema.processlist AS session "
                           "ON session.id = trx.trx_mysql_thread_id "
                           "WHERE trx.trx_state = 'LOCK WAIT' AND session.db = DATABASE() "
                           "AND session.id <> CONNECTION_ID()")
        else:
            raise NotImplementedError(f"no lock waits to count on {connection.vendor}")
        return cursor.fetchone()[0]


def a_session_waits_for_a_lock(timeout: float) -> bool:
    """Whether another session is seen waiting for a row lock within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while sessions_waiting_for_a_lock() == 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(LOCK_WAIT_POLL)
    return True


def column_sql(model: type[Model], field: str) -> str:
    """``"table"."column"`` of a model's field as this database quotes it in queries."""
    quote = connection.ops.quote_name
    return f"{quote(model._meta.db_table)}.{quote(model._meta.get_field(field).column)}"


@dataclass
class Holder:
    released_at: float | None = None  # time.monotonic() when it let go


@contextmanager
def instance_locked_elsewhere(pk: Any, *, seconds: float = 30.0) -> Iterator[Holder]:
    """An instance's row locked by another connection (a thread, as another process's
    command would) from entry until exit, or for ``seconds`` if that ends first."""
    from django_workflows.models import WorkflowInstance

    holding, release, holder = threading.Event(), threading.Event(), Holder()

    def hold() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk=pk)
                holding.set()
                release.wait(seconds)
                holder.released_at = time.monotonic()
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert holding.wait(30), "the other connection never got the lock"
    try:
        yield holder
    finally:
        release.set()
        thread.join(30)
        assert not thread.is_alive(), "the other connection never let go"


def spelled_out(sql: str, params: Any = None) -> str | None:
    """A statement the connection ran, as the SQL it runs: the ``EXECUTE`` of a prepared
    statement (PostgreSQL) becomes the statement it names, with its values in place of its
    placeholders; None for a ``PREPARE``, which a connection sends once, not per command.
    Several statements sent at once stay joined by ``; ``."""
    from django_workflows.services.sql import statements

    if sql.startswith("PREPARE "):
        return None
    prepared = getattr(statements(), "prepared", None)
    if prepared is None or "EXECUTE dwf_" not in sql:
        return sql
    by_name = {name: text for text, name in prepared.names.items()}
    values = iter(params or ())
    parts = []
    for part in sql.split("; "):
        pieces = by_name[part.split(" ", 1)[1].split("(", 1)[0]].split("%s")
        parts.append(pieces[0] + "".join(_literal(next(values)) + piece
                                         for piece in pieces[1:]))
    return "; ".join(parts)


def _literal(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def at_once(*sides: Callable[[], Any], timeout: float = 30.0) -> list[Any]:
    """Run each side in a thread of its own (its own connection), started together; what
    each returned or raised."""
    barrier = threading.Barrier(len(sides), timeout=timeout)
    results: list[Any] = [None] * len(sides)

    def run(index: int, side: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[index] = side()
        except Exception as error:  # what a side raised is its answer
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, side), daemon=True)
               for i, side in enumerate(sides)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), "a side never finished"
    return results


DEADLOCK_SQLSTATE = "40P01"  # PostgreSQL broke a deadlock by aborting the statement


def lost_a_deadlock(error: BaseException | None) -> bool:
    """Whether ``error`` (or an error it was raised from) is PostgreSQL aborting our
    statement to break a deadlock."""
    while error is not None:
        if getattr(error, "sqlstate", None) == DEADLOCK_SQLSTATE:
            return True
        error = error.__cause__
    return False


def flush_retrying_lost_deadlocks(handle: Callable[..., Any], tries: int = 3
                                  ) -> Callable[..., Any]:
    """Django's ``flush`` command (the end of every transactional test), tried again when
    the server aborted it to break a deadlock.

    PostgreSQL's flush is one ``TRUNCATE`` of every table, which locks them one by one in
    the order of a Python set. A worker of the shared cluster may still be in a transaction
    of its own when the test that waited for its attempts ends (a slot's release, for
    one, follows the attempt's result), holding a table the flush wants and then wanting
    one the flush holds. The server aborts one of the two; when it is the flush, the
    test's rows stay for the next test to see. The aborted flush changed nothing, so
    trying it again is safe.
    """
    from django.core.management.base import CommandError

    def retrying(self: Any, **options: Any) -> Any:
        for _ in range(tries - 1):
            try:
                return handle(self, **options)
            except CommandError as error:
                if not lost_a_deadlock(error):
                    raise
        return handle(self, **options)

    return retrying
