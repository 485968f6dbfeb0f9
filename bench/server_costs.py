"""What PostgreSQL spends on our statements, for ``bench/operations.py --profile``: its
backend's CPU and the WAL (with pg_walinspect, by table and index), the time of each
statement (``pg_stat_statements``) and the plan of each with what it read and wrote
(``EXPLAIN (ANALYZE, BUFFERS, WAL)``).

``pg_stat_statements`` needs the server started with it preloaded; without it the study
says so and the rest goes on::

    ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements';  -- then restart
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection, transaction


def database_counters() -> tuple[float, int]:
    """This connection's PostgreSQL backend's CPU seconds so far (from ``/proc``: the
    server runs on this machine) and the WAL written so far, in bytes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
        pid, wal = cursor.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(wal)


def wal_by_relation(start: int, end: int, operations: int) -> None:
    """Where the WAL between two positions went, per operation: by table and index of this
    database (pg_walinspect reads the records), and the commit records of the same
    transactions. Records of other databases on the server are left out."""
    rows = wal_rows(start, end, operations)
    if rows is None:
        return
    print("\nWAL per operation, by what it was written for (pg_walinspect):\n")
    print("| table or index: record | bytes | records |")
    print("| --- | ---: | ---: |")
    for what, size, records in rows:
        print(f"| {what} | {size:,.0f} | {records:.2f} |")


def wal_rows(start: int, end: int, operations: int) -> list[tuple[str, float, float]] | None:
    """:func:`wal_by_relation`'s rows (what, bytes and records per operation), the largest
    first; None (and why, printed) without pg_walinspect."""
    with connection.cursor() as cursor:
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        except DatabaseError as error:  # PostgreSQL before 15, or without its contrib
            print(f"\n(no WAL by table: pg_walinspect is not available: {error})")
            return None
        database, end = _database_and_flushed(cursor, end)
        cursor.execute(
            """WITH records AS (
                   SELECT * FROM pg_get_wal_records_info('0/0'::pg_lsn + %s,
                                                         '0/0'::pg_lsn + %s)),
               ours AS (SELECT DISTINCT xid FROM records WHERE strpos(block_ref, %s) > 0)
               SELECT coalesce(c.relname || ': ' || r.record_type,
                               r.resource_manager || ' ' || r.record_type),
                      sum(r.record_length), count(*)
               FROM records r
               LEFT JOIN pg_class c ON c.relfilenode = substring(
                   r.block_ref FROM 'rel \\d+/\\d+/(\\d+)')::oid
               WHERE strpos(r.block_ref, %s) > 0
                  OR (r.resource_manager = 'Transaction' AND r.xid IN (SELECT xid FROM ours))
               GROUP BY 1 ORDER BY 2 DESC""", [start, end, database, database])
        return [(what, size / operations, records / operations)
                for what, size, records in cursor.fetchall()]


def _database_and_flushed(cursor: Any, end: int) -> tuple[str, int]:
    """This database's oid as a WAL record names it (``/oid/``), and ``end`` once the WAL is
    flushed that far (pg_walinspect reads no further): at once where commits wait for their
    flush, within the WAL writer's delay where they do not (``synchronous_commit=off``); no
    further than the flush of three seconds later."""
    deadline = time.monotonic() + 3
    while True:
        cursor.execute("SELECT oid, pg_current_wal_flush_lsn() - '0/0'::pg_lsn "
                       "FROM pg_database WHERE datname = current_database()")
        oid, flushed = cursor.fetchone()
        if int(flushed) >= end or time.monotonic() > deadline:
            return f"/{oid}/", min(end, int(flushed))
        time.sleep(0.05)


def database_wal(start: int, end: int) -> tuple[int, int, int]:
    """The WAL between two positions written for this database: its bytes (records of its
    tables and indexes, and the commit records of their transactions), its commit records
    (each a WAL flush at ``synchronous_commit=on``), and the bytes of full-page images among
    them (a page's first change after a checkpoint: they move from run to run). Records of
    other databases on the server are left out."""
    with connection.cursor() as cursor:
        database, end = _database_and_flushed(cursor, end)
        if start >= end:
            return 0, 0, 0
        cursor.execute(
            """WITH records AS (
                   SELECT * FROM pg_get_wal_records_info('0/0'::pg_lsn + %s,
                                                         '0/0'::pg_lsn + %s)),
               ours AS (SELECT DISTINCT xid FROM records WHERE strpos(block_ref, %s) > 0)
               SELECT coalesce(sum(record_length), 0),
                      count(*) FILTER (WHERE resource_manager = 'Transaction'
                                       AND record_type LIKE 'COMMIT%%'),
                      coalesce(sum(fpi_length), 0)
               FROM records
               WHERE strpos(block_ref, %s) > 0
                  OR (resource_manager = 'Transaction' AND xid IN (SELECT xid FROM ours))""",
            [start, end, database, database])
        size, commits, fpi = cursor.fetchone()
    return int(size), int(commits), int(fpi)


# -- pg_stat_statements -------------------------------------------------------------------


def statements_available() -> bool:
    """Whether ``pg_stat_statements`` counts here (the extension made, the library loaded);
    says why not when it does not."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            cursor.execute("SELECT 1 FROM pg_stat_statements LIMIT 1")
    except DatabaseError as error:
        print(f"\n(no time per statement: pg_stat_statements is not loaded: "
              f"{str(error).strip().splitlines()[0]}; ALTER SYSTEM SET "
              "shared_preload_libraries = 'pg_stat_statements' and restart the server)")
        return False
    return True


def reset_statements() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_statements_reset()")


def statement_rows() -> list[tuple[Any, ...]]:
    """Each statement of this database since the last reset, the costliest first: its
    text, calls, execution and planning time, rows and what it touched."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT query, calls, total_exec_time, total_plan_time, rows,
                      shared_blks_hit + local_blks_hit, shared_blks_read, shared_blks_dirtied,
                      wal_bytes
               FROM pg_stat_statements
               WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               ORDER BY total_exec_time DESC LIMIT 12""")
        return cursor.fetchall()


def print_statement_times(rows: list[tuple[Any, ...]], operations: int) -> None:
    total = sum(row[2] for row in rows) or 1.0
    print("\nTime per operation in each statement (pg_stat_statements; ms are the server's "
          "execution time, which includes waits for I/O and locks):\n")
    print("| statement | calls | exec ms | of all | plan ms | rows | blocks hit / read / "
          "dirtied | WAL bytes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    n = operations
    for query, calls, exec_ms, plan_ms, returned, hit, read, dirtied, wal in rows:
        print(f"| `{short(query)}` | {calls / n:.2f} | {exec_ms / n:.3f} | "
              f"{exec_ms / total:.0%} | {plan_ms / n:.3f} | {returned / n:.1f} | "
              f"{hit / n:.1f} / {read / n:.1f} / {dirtied / n:.1f} | {float(wal) / n:,.0f} |")


def short(query: str, width: int = 110) -> str:
    """A statement on one line, without the name it was prepared under."""
    text = re.sub(r"^PREPARE \w+ AS ", "", re.sub(r"\s+", " ", query).strip())
    return text if len(text) <= width else text[:width - 1] + "…"


# -- EXPLAIN ------------------------------------------------------------------------------


class _Undo(Exception):
    """Rolls back what EXPLAIN ANALYZE did."""


@contextmanager
def explaining(plans: list[tuple[str, str]]) -> Iterator[None]:
    """While open, each statement this connection sends (each part of a batch) is first run
    under ``EXPLAIN (ANALYZE, BUFFERS, WAL)`` and rolled back, then for real; ``plans``
    gets (statement, plan). A batch's parts are its ``; ``-separated statements, each with
    as many of the parameters as it has ``%s``."""
    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not many and not sql.lstrip().upper().startswith(("PREPARE", "EXPLAIN", "SET ")):
            values = list(params or ())
            for part in sql.split("; "):
                count = part.count("%s")
                part_params, values = values[:count], values[count:]
                plans.append((prepared_as(part),
                              explain(execute, part, part_params, many, context)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield


def prepared_as(sql: str) -> str:
    """The statement an ``EXECUTE name(...)`` runs, as it was prepared (else ``sql``); read
    through the driver's own connection, which no execute wrapper sees. The server keeps the
    whole string a ``PREPARE`` came in, with the others sent beside it: only its own part
    is the statement."""
    name = re.match(r"\s*EXECUTE (\w+)", sql)
    if name is None:
        return sql
    found = connection.connection.execute(
        "SELECT statement FROM pg_prepared_statements WHERE name = %s",
        [name.group(1)]).fetchone()
    own = found and re.search(rf"PREPARE {name.group(1)} AS (.*?)(?=; PREPARE \w+ AS |\Z)",
                              found[0], re.DOTALL)
    return own.group(1) if own else sql


def explain(execute: Any, sql: str, params: list[Any], many: bool, context: Any) -> str:
    lines: list[str] = []
    try:
        with transaction.atomic():
            execute(f"EXPLAIN (ANALYZE, BUFFERS, WAL) {sql}", params, many, context)
            lines = [row[0] for row in context["cursor"].fetchall()]
            raise _Undo
    except _Undo:
        pass
    except DatabaseError as error:
        return f"(not explained: {error})"
    return "\n".join(lines)


def print_plans(plans: list[tuple[str, str]]) -> None:
    print("\nEach statement of one operation, run under EXPLAIN (ANALYZE, BUFFERS, WAL) and "
          "rolled back before it ran for real:")
    for sql, plan in plans:
        print(f"\n{short(sql, 200)}\n{plan}")
