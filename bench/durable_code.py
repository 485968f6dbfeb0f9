#!/usr/bin/env python
"""Durable code: a four-step durable function against a raw no-op task, and what one step's
checkpoint costs.

    .venv/bin/python bench/durable_code.py                       # ORM broker; ~2 minutes
    .venv/bin/python bench/durable_code.py --brokers orm,tasks-db --tasks 600
    .venv/bin/python bench/durable_code.py --brokers "" --operations 400   # the cost alone

PostgreSQL (and Redis for ``--brokers redis``) at 127.0.0.1, with bench/operations.py's
machinery: a database of its own (``dwf_bench_ops_<pid>``, dropped at the end), its
settings (``bench/settings_operations.py``) and its clusters.

(a) For each broker (``orm``: django-q2's ORM broker and a ``qcluster``; ``tasks-db``:
    Django's Tasks database backend and ``db_worker`` processes; ``redis``), with
    ``--workers`` workers: N raw no-op tasks on that broker, then N instances of
    ``bench-durable`` (one auto step whose ``Operation(durable=True)`` makes four no-op
    ``ctx.step`` calls) started before the workers start; each rate counted between 10 %
    and 90 % as bench/operations.py counts, raw and ours alternating ``--repeat`` times,
    the best of each. The aim: ours at >= 0.5 of raw.

(b) The checkpoint of one step: the worker's path (claim, run, finish) in this process
    over ``--operations`` attempts of four steps and as many of none (the same workflow,
    ``state["steps"]`` 0), in alternating batches. Per operation, then per step (four
    steps' figure less none's, over four): the statements this process sent (round trips,
    by kind), the transactions PostgreSQL committed (``pg_stat_database.xact_commit``,
    read with the connection closed so its backend has published them), the commit
    records in the WAL (each a WAL flush at ``synchronous_commit=on``) and the WAL bytes
    written for this database (``pg_walinspect``, records of other databases on the server
    left out), and the CPU of this process and of its PostgreSQL backend. The aims: at most
    one statement and one commit per step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection, connections
from django.test.utils import override_settings

from bench import operations as ops
from bench.calibration import calibration_line
from bench.server_costs import database_counters, database_wal
from django_workflows import services
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.runners.worker import run_attempt

WORKFLOW = "bench-durable"
STEPS = 4


# -- (a) the rate on a broker ---------------------------------------------------------------


def start_durable(count: int, steps: int = STEPS) -> None:
    for _ in range(count):
        services.create(WORKFLOW, state={"steps": steps}, start=True)


def durable_done() -> int:
    return WorkflowInstance.objects.filter(workflow=WORKFLOW, current_step="done").count()


def durable_functions(broker: str, tasks: int, workers: int, seconds: float) -> ops.Rate:
    ops.clear(broker)
    start_durable(tasks)
    with ops.cluster(broker, workers) as running:
        rate = ops.watch(durable_done, tasks, seconds, running)
    steps = JournalEntry.objects.filter(instance__workflow=WORKFLOW).count()
    if rate.done == tasks and steps != tasks * STEPS:
        raise SystemExit(f"{tasks} durable functions ran but {steps} steps were journaled, "
                         f"not {tasks * STEPS}")
    return rate


def rates(brokers: list[str], options: argparse.Namespace) -> list[tuple[str, Any, Any]]:
    rows = []
    for broker in brokers:
        ops.use_broker(broker)
        raws, ours = [], []
        for run in range(options.repeat):
            raws.append(ops.raw_tasks(broker, options.tasks, options.workers, options.seconds))
            ours.append(durable_functions(broker, options.tasks, options.workers,
                                          options.seconds))
            print(f"{broker} run {run + 1}: raw {raws[-1].per_second:.0f} tasks/s "
                  f"({raws[-1].cpu_ms:.1f} ms CPU each), four-step durable functions "
                  f"{ours[-1].per_second:.0f}/s ({ours[-1].cpu_ms:.1f} ms CPU each); load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
        rows.append((broker, raws, ours))
    return rows


def print_rates(rows: list[tuple[str, Any, Any]], options: argparse.Namespace) -> None:
    print(f"\n(a) {options.workers} workers, {options.tasks} tasks per run, best of "
          f"{options.repeat} runs each; aim: >= 0.5 of raw\n")
    print("| broker | raw no-op tasks/s | four-step durable functions/s | ratio | aim met | "
          "workers' CPU per task, raw / ours |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for broker, raws, ours in rows:
        raw, our = max(r.per_second for r in raws), max(r.per_second for r in ours)
        ratio = our / raw if raw else float("nan")
        short = [r.done for r in (*raws, *ours) if r.done < options.tasks]
        note = f" (bounded: a run did only {min(short)})" if short else ""
        print(f"| {broker} | {raw:.0f} | {our:.0f} | {ratio:.2f} | "
              f"{'yes' if ratio >= 0.5 else 'no'} | {min(r.cpu_ms for r in raws):.1f} / "
              f"{min(r.cpu_ms for r in ours):.1f} ms |{note}")


# -- (b) the cost of a step -------------------------------------------------------------------


class Recorder:
    """A runner that only keeps tokens: the measurement runs them itself."""

    tokens: list[str] = []

    def enqueue(self, tokens: list[str]) -> None:
        Recorder.tokens.extend(tokens)


def queued(count: int, steps: int) -> list[str]:
    Recorder.tokens = []
    with override_settings(DJANGO_WORKFLOWS={**settings.DJANGO_WORKFLOWS,
                                             "RUNNER": f"{__name__}.Recorder"}):
        start_durable(count, steps)
    return list(Recorder.tokens)


def admin_connection() -> psycopg.Connection[Any]:
    db = settings.DATABASES["default"]
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                           password=db["PASSWORD"] or None, dbname="postgres",
                           autocommit=True)


def committed() -> int:
    """Transactions PostgreSQL committed in this database so far, once every backend on it
    has gone (a backend publishes its counters when it exits)."""
    name = settings.DATABASES["default"]["NAME"]
    connections.close_all()
    deadline = time.monotonic() + 10
    with admin_connection() as conn:
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                           [name]).fetchone()[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                           [name]).fetchone()
    assert row is not None
    return int(row[0])


@dataclass
class Cost:
    """What the worker's path spent on ``operations`` operations."""

    operations: int = 0
    statements: Counter[str] = field(default_factory=Counter)
    transactions: int = 0
    wal_bytes: int = 0
    wal_commits: int = 0
    fpi_bytes: int = 0
    cpu: float = 0.0  # this process's seconds
    backend_cpu: float = 0.0  # its PostgreSQL backend's seconds
    wall: float = 0.0

    def per(self, what: str) -> float:
        value = sum(self.statements.values()) if what == "statements" else getattr(self, what)
        return float(value) / self.operations


def batch(tokens: list[str], cost: Cost, overhead: int = 0) -> None:
    """Run ``tokens``' attempts as a worker would; add what they cost to ``cost``.
    ``overhead``: the transactions of an empty batch (the readings' own, a connection's)."""
    kinds: Counter[str] = Counter()

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        kinds[sql.split(None, 1)[0].upper()] += 1
        return execute(sql, params, many, context)

    before = committed()
    backend, wal = database_counters()
    cpu, began = time.process_time(), time.perf_counter()
    with connection.execute_wrapper(count):
        for token in tokens:
            if not run_attempt(token, heartbeat_thread=True):
                raise SystemExit(f"attempt {token} was not run")
    cost.wall += time.perf_counter() - began
    cost.cpu += time.process_time() - cpu
    backend_after, wal_after = database_counters()
    size, commits, fpi = database_wal(wal, wal_after)
    cost.transactions += committed() - before - overhead
    cost.operations += len(tokens)
    cost.statements.update(kinds)
    cost.backend_cpu += backend_after - backend
    cost.wal_bytes += size
    cost.wal_commits += commits
    cost.fpi_bytes += fpi


def checkpoint_cost(operations: int, batches: int) -> tuple[Cost, Cost]:
    """(four steps, no step): the worker's path in alternating batches."""
    with connection.cursor() as cursor:
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        except DatabaseError as error:
            raise SystemExit(f"(b) needs pg_walinspect (PostgreSQL 15's contrib): {error}") \
                from None
    ops.clear("orm")
    four, none = queued(operations + 2, STEPS), queued(operations + 2, 0)
    for token in (four.pop(), none.pop(), four.pop(), none.pop()):  # statements prepared
        run_attempt(token, heartbeat_thread=True)
    empty = Cost()
    batch([], empty)
    costs = (Cost(), Cost())
    size = max(1, operations // batches)
    for start in range(0, operations, size):
        for tokens, cost in ((four, costs[0]), (none, costs[1]))[::1 if start % 2 else -1]:
            batch(tokens[start:start + size], cost, empty.transactions)
    steps = JournalEntry.objects.filter(instance__workflow=WORKFLOW).count()
    if steps != (operations + 2) * STEPS:
        raise SystemExit(f"{steps} steps journaled, not {(operations + 2) * STEPS}")
    return costs


def print_costs(four: Cost, none: Cost) -> None:
    def step(what: str) -> float:
        return (four.per(what) - none.per(what)) / STEPS

    rows = [
        ("statements sent (round trips)", "statements", "{:.2f}", 1.0),
        ("transactions committed (server)", "transactions", "{:.2f}", 1.0),
        ("WAL commit records (flushes)", "wal_commits", "{:.2f}", None),
        ("WAL bytes (full-page images in it)", "wal_bytes", "{:,.0f}", None),
        ("this process's CPU ms", "cpu", "{:.3f}", None),
        ("its PostgreSQL backend's CPU ms", "backend_cpu", "{:.3f}", None),
        ("wall ms", "wall", "{:.3f}", None),
    ]
    print(f"\n(b) The worker's path in this process: {four.operations} operations of four "
          f"no-op steps and {none.operations} of none, in alternating batches; per step: "
          "(four steps - none) / 4\n")
    print("| per | four steps | none | one step | aim |")
    print("| --- | ---: | ---: | ---: | --- |")
    for label, what, fmt, aim in rows:
        scale = 1000 if what in ("cpu", "backend_cpu", "wall") else 1
        values = [four.per(what) * scale, none.per(what) * scale, step(what) * scale]
        shown = [fmt.format(v) for v in values]
        if what == "wal_bytes":
            shown = [f"{s} ({fmt.format(c.per('fpi_bytes'))})" for s, c in
                     zip(shown, (four, none), strict=False)] + shown[2:]
        met = aim is not None and values[2] <= aim + 0.005
        verdict = "" if aim is None else f"<= {aim:g}: {'met' if met else 'not met'}"
        print(f"| {label} | {' | '.join(shown)} | {verdict} |")
    print("\nStatements by kind, per operation: four steps "
          + ", ".join(f"{k} {v / four.operations:.2f}" for k, v in sorted(four.statements.items()))
          + "; none " + ", ".join(f"{k} {v / none.operations:.2f}"
                                  for k, v in sorted(none.statements.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="orm",
                        help='comma-separated: orm, tasks-db, redis ("": only (b))')
    parser.add_argument("--tasks", type=int, default=1000, help="(a): tasks per run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0, help="(a): time bound per run")
    parser.add_argument("--repeat", type=int, default=2, help="(a): runs of each, alternating")
    parser.add_argument("--operations", type=int, default=400,
                        help="(b): operations of each kind (0: no (b))")
    parser.add_argument("--batches", type=int, default=4, help="(b): batches of each kind")
    options = parser.parse_args()
    brokers = [broker for broker in options.brokers.split(",") if broker]
    load = os.getloadavg()
    with ops.database():
        rows = rates(brokers, options)
        costs = checkpoint_cost(options.operations, options.batches) \
            if options.operations else None
        pg = connection.pg_version // 10000
    print(f"\nPostgreSQL {pg}, persistent connections; load average {load[0]:.1f} / "
          f"{load[1]:.1f} / {load[2]:.1f} before and {os.getloadavg()[0]:.1f} after; "
          f"{calibration_line()}")
    if rows:
        print_rates(rows, options)
    if costs:
        print_costs(*costs)


if __name__ == "__main__":
    main()
