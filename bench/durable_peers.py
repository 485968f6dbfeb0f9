#!/usr/bin/env python
"""Durable functions inline against DBOS, on the same PostgreSQL, in rotating rounds.

    .venv/bin/python bench/durable_peers.py                     # 4 steps and 1; ~4 minutes
    .venv/bin/python bench/durable_peers.py --steps 4 --rounds 5 --seconds 5
    .venv/bin/python bench/durable_peers.py --before HEAD~1     # and another commit's code
    .venv/bin/python bench/durable_peers.py --steps 1 --bound   # and with no flush waited for

The peer is ``dbos_bench.py direct --steps N`` of the shared peers bench (``--peers``,
default ``../shared/bench-peers`` beside this checkout; its README says how to make its
venv, ``/tmp/peers-dbos``): one ``@DBOS.workflow`` calling N no-op ``@DBOS.step``s, in a loop
from one thread. Ours is the peers bench's ``project-inline``: with the immediate runner,
``services.create(workflow, start=True)`` runs the whole life of a workflow in this thread
(create and start, the attempt claimed, run and finished, the instance at ``done``):
``bench-durable`` (an ``Operation(durable=True)`` making N no-op ``ctx.step`` calls) for N
steps, and for one step also ``bench-noop`` (a plain no-op operation, the peers bench's own
``project-inline``). Each contender runs in a process of its own, on a database of its own
that it makes and drops; the order of the contenders turns every round, so drift on a
shared machine hits them all. Each prints one JSON line, read with the peers bench's
``pgstats.Window`` (``pg_stat_database``, cluster-wide ``pg_stat_wal``, PostgreSQL's CPU).

It prints, per contender, the median rate over the rounds (each round's beside), the client
CPU per workflow and what PostgreSQL did per workflow, then ours over DBOS's rate for the
same number of steps: the aim is 2.0 or more. Ours also counts, over ``--account`` more
workflows after the timed loop, the statements it sent, and the WAL commit records and bytes
of its own database alone (``bench/server_costs.py: database_wal``), which other clients of
the server do not blur as they do ``pg_stat_wal``. ``--bound`` adds ours with commits that do
not wait for their WAL flush (``synchronous_commit=off``, which is not durable): no change
that saves flushes can go faster than that.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DBOS_PYTHON = "/tmp/peers-dbos/bin/python"
DBOS_DATABASE = f"peers_dbos_durable_{os.getpid()}"  # dbos_bench.py makes it, and keeps it


# -- ours, in a process of its own ------------------------------------------------------------


def inline(options: argparse.Namespace) -> None:
    """One contender of ours: ``--workflow`` with ``--steps`` in a timed loop; a JSON line."""
    if options.tree:  # another commit's django_workflows, before this tree's
        sys.path.insert(0, options.tree)
    sys.path.insert(1 if options.tree else 0, str(ROOT))
    sys.path.append(options.peers)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_inline"
    os.environ["DWF_BENCH_DB"] = options.db
    if options.no_flush_wait:
        os.environ["DWF_BENCH_NO_FLUSH_WAIT"] = "1"
    import pgstats  # the shared peers bench's: the same reading as DBOS's

    pgstats.recreate(options.db)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, connections

    import django_workflows
    from bench.server_costs import database_counters, database_wal, wal_rows
    from django_workflows import services
    from django_workflows.models import WorkflowInstance

    if options.tree:
        assert django_workflows.__file__.startswith(options.tree), django_workflows.__file__
    state = {"steps": options.steps} if options.workflow == "bench-durable" else None
    try:
        call_command("migrate", verbosity=0)
        connection.cursor().execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")

        def run() -> None:
            services.create(options.workflow, state=state, start=True)

        connections.close_all()
        window = pgstats.Window(options.db)
        window.start()
        for _ in range(options.warm_up):
            run()
        window.loop_started()
        count, cpu0, began = 0, time.process_time(), time.perf_counter()
        deadline = began + options.seconds
        while time.perf_counter() < deadline:
            run()
            count += 1
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu0
        window.loop_stopped()
        connections.close_all()
        window.stop()
        out: dict[str, Any] = {
            "contender": options.name, "units": count, "seconds": seconds,
            "rate": count / seconds, "cpu_ms": cpu / count * 1000,
            "pg": window.per(count + options.warm_up), "load": os.getloadavg()[0]}
        if options.account:
            kinds: Counter[str] = Counter()

            def counted(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
                kinds[sql.split(None, 1)[0].upper()] += 1
                return execute(sql, params, many, context)

            run()  # the connection made, its statements prepared
            _, start = database_counters()
            with connection.execute_wrapper(counted):
                for _ in range(options.account):
                    run()
            _, end = database_counters()
            size, commits, fpi = database_wal(start, end)
            n = options.account
            out["own"] = {"statements": sum(kinds.values()) / n,
                          "kinds": {k: v / n for k, v in sorted(kinds.items())},
                          "wal_bytes": size / n, "wal_commits": commits / n, "fpi_bytes": fpi / n,
                          "wal_by_table": (wal_rows(start, end, n) or [])[:options.wal_rows]}
        total = WorkflowInstance.objects.filter(workflow=options.workflow).count()
        done = WorkflowInstance.objects.filter(workflow=options.workflow,
                                               current_step="done").count()
        if done != total:
            raise SystemExit(f"{total - done} of {total} workflows not done")
        print(json.dumps(out), flush=True)
    finally:
        connections.close_all()
        pgstats.admin(f'DROP DATABASE IF EXISTS "{options.db}" WITH (FORCE)')


# -- the rounds -------------------------------------------------------------------------------


def contenders(options: argparse.Namespace, before: str | None) -> list[tuple[str, list[str]]]:
    jobs = []
    for steps in options.steps:
        dbos = "dbos-direct" if steps == 1 else f"dbos-direct-{steps}steps"
        jobs.append((dbos, [options.dbos_python, str(Path(options.peers) / "dbos_bench.py"),
                            "direct", "--steps", str(steps), "--seconds", str(options.seconds),
                            "--db", DBOS_DATABASE]))
        ours = [("bench-durable", f"project-inline-{steps}steps")]
        if steps == 1:
            ours.append(("bench-noop", "project-inline"))
        for workflow, name in ours:
            trees = [("", name, [])]
            if before:
                trees.append((before, f"{name}@{options.before}", []))
            if options.bound:
                trees.append(("", f"{name}-no-flush-wait", ["--no-flush-wait"]))
            for tree, label, extra in trees:
                jobs.append((label, [sys.executable, __file__, "inline", "--workflow",
                                     workflow, "--steps", str(steps), "--name", label,
                                     "--tree", tree, "--seconds", str(options.seconds),
                                     "--peers", options.peers, "--account",
                                     str(options.account), "--wal-rows",
                                     str(options.wal_rows), "--db",
                                     f"dwf_bench_inline_{os.getpid()}", *extra]))
    return jobs


def run(label: str, argv: list[str], results: dict[str, list[dict[str, Any]]]) -> None:
    load = os.getloadavg()[0]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"{label} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    for out in lines:
        out["load_before"] = load
        results.setdefault(out["contender"], []).append(out)
        print(f"  {out['contender']}: {out['rate']:.0f}/s, {out['cpu_ms']:.2f} ms CPU; load "
              f"{load:.2f} -> {out['load']:.2f}", file=sys.stderr, flush=True)


def before_tree(commit: str, directory: str) -> str:
    """``commit``'s django_workflows in ``directory`` (this tree's bench runs it)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "django_workflows"],
                             capture_output=True, check=True)
    path = Path(directory) / "tree"
    path.mkdir()
    with tempfile.TemporaryFile() as file:
        file.write(archive.stdout)
        file.seek(0)
        with tarfile.open(fileobj=file) as tar:
            tar.extractall(path, filter="data")
    return str(path)


def report(results: dict[str, list[dict[str, Any]]], options: argparse.Namespace) -> None:
    def med(name: str, get: Any) -> float:
        return statistics.median(get(o) for o in results[name])

    loads = [o[key] for runs in results.values() for o in runs for key in ("load_before", "load")]
    print(f"\n{options.rounds} rounds, contenders in turn, {options.seconds:g} s each; load "
          f"average (1 min) {min(loads):.2f} to {max(loads):.2f}\n")
    print("| contender | workflows/s median (each round) | client CPU ms | server transactions "
          "| WAL fsyncs (cluster) | WAL bytes (cluster) | rows inserted / updated | own "
          "database: statements, WAL commits, WAL bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, runs in results.items():
        own = runs[-1].get("own")
        own_text = (f"{own['statements']:.1f}, {own['wal_commits']:.2f}, "
                    f"{own['wal_bytes']:,.0f}" if own else "")
        print(f"| `{name}` | {med(name, lambda o: o['rate']):,.0f} "
              f"({' / '.join(format(o['rate'], '.0f') for o in runs)}) | "
              f"{med(name, lambda o: o['cpu_ms']):.2f} | "
              f"{med(name, lambda o: o['pg']['commits']):.2f} | "
              f"{med(name, lambda o: o['pg']['wal_syncs']):.2f} | "
              f"{med(name, lambda o: o['pg']['wal_bytes']):,.0f} | "
              f"{med(name, lambda o: o['pg']['inserted']):.1f} / "
              f"{med(name, lambda o: o['pg']['updated']):.1f} | {own_text} |")
    for name, runs in results.items():
        own = runs[-1].get("own")
        if own and own["wal_by_table"]:
            print(f"\n`{name}`, per workflow over the last round's {options.account} more: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in own["kinds"].items())
                  + "; its largest WAL records (bench/server_costs.py: wal_rows):\n")
            print("| table or index: record | bytes | records |\n|---|---:|---:|")
            for what, size, records in own["wal_by_table"]:
                print(f"| {what} | {size:,.0f} | {records:.2f} |")
    print("\n| ours | DBOS | ours / DBOS (medians) | aim >= 2.0 |\n|---|---|---:|---|")
    for name in results:
        if not name.startswith("project-inline"):
            continue
        found = re.match(r"project-inline-(\d+)steps", name)
        steps = int(found.group(1)) if found else 1
        peer = "dbos-direct" if steps == 1 else f"dbos-direct-{steps}steps"
        if peer in results:
            ratio = med(name, lambda o: o["rate"]) / med(peer, lambda o: o["rate"])
            print(f"| `{name}` | `{peer}` | {ratio:.2f} | {'met' if ratio >= 2 else 'not met'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=["inline"], help=argparse.SUPPRESS)
    parser.add_argument("--steps", default="4,1", help="steps per workflow, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="per timed loop")
    parser.add_argument("--account", type=int, default=100,
                        help="ours: statements and own WAL over this many more (0: none)")
    parser.add_argument("--before", default="", metavar="COMMIT",
                        help="also run our contenders on this commit's django_workflows")
    parser.add_argument("--wal-rows", type=int, default=12,
                        help="ours: the largest WAL records shown, by table and index")
    parser.add_argument("--bound", action="store_true",
                        help="also ours with commits that do not wait for their WAL flush "
                             "(synchronous_commit=off; not durable): what fewer flushes "
                             "could give at most")
    parser.add_argument("--peers", default=str(ROOT.parent / "shared" / "bench-peers"))
    parser.add_argument("--dbos-python", default=DBOS_PYTHON)
    # the inline child's own
    parser.add_argument("--workflow", default="bench-durable", help=argparse.SUPPRESS)
    parser.add_argument("--name", default="", help=argparse.SUPPRESS)
    parser.add_argument("--tree", default="", help=argparse.SUPPRESS)
    parser.add_argument("--db", default="dwf_bench_inline", help=argparse.SUPPRESS)
    parser.add_argument("--warm-up", type=int, default=20, help=argparse.SUPPRESS)
    parser.add_argument("--no-flush-wait", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.mode == "inline":
        options.steps = int(options.steps)
        inline(options)
        return
    options.steps = [int(s) for s in options.steps.split(",")]
    if not Path(options.dbos_python).exists():
        raise SystemExit(f"no DBOS venv at {options.dbos_python}: {options.peers}/README.md "
                         "says how to make it")
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="dwf-before-") as directory:
        before = before_tree(options.before, directory) if options.before else None
        jobs = contenders(options, before)
        try:
            for r in range(options.rounds):
                print(f"round {r + 1} of {options.rounds}", file=sys.stderr, flush=True)
                turn = r % len(jobs)
                for label, argv in jobs[turn:] + jobs[:turn]:
                    run(label, argv, results)
        finally:
            subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-qAtc",
                            f'DROP DATABASE IF EXISTS "{DBOS_DATABASE}" WITH (FORCE)'],
                           check=False)
    report(results, options)


if __name__ == "__main__":
    main()
