#!/usr/bin/env python
"""Tasks: what ``complete`` costs, and how the inbox holds up as the task table grows.

    .venv/bin/python bench/tasks.py                  # PostgreSQL at 127.0.0.1; a few minutes
    .venv/bin/python bench/tasks.py --large 200000 --seconds 2

Two measures, each printed as a ratio to a baseline measured in the same run:

1. ``services.complete(instance, input=...)`` (check the input against the form, merge
   it, close the task, leave the step: one transaction) against the same instance
   driven by ``services.update_state`` + ``services.next`` in one transaction, on a
   workflow whose manual steps each wait for a decision. The aim is at least 0.8.
2. The inbox (``services.access.acting_on_tasks``, its first page of 50 as the API and
   the admin read it) of a manager, with ``--large`` tasks in the table (a tenth of them
   open) against ``--small``: the aim is at most 1.5. Each figure is the median of
   ``--runs`` reads, the two sizes taking turns.

It creates two databases of its own (``dwf_bench_tasks_<pid>_small`` and
``_large``), migrates them and drops them at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_tasks"
os.environ["DWF_BENCH_DB"] = f"dwf_bench_tasks_{os.getpid()}_small"
os.environ["DWF_BENCH_DB_LARGE"] = f"dwf_bench_tasks_{os.getpid()}_large"

import psycopg  # noqa: E402

from bench.calibration import calibration_line  # noqa: E402

DECISION = {"type": "object", "required": ["decision"], "additionalProperties": False,
            "properties": {"decision": {"enum": ["approved", "rejected"]},
                           "comment": {"type": "string", "maxLength": 200}}}
STEPS = 200
# Who the open tasks of a big table wait for: most for one of two groups, some for one
# person; a manager's inbox is a fifth of all open tasks.
KEYS = (("group:managers", 0.2), ("group:operators", 0.5), ("group:clerks", 0.2))


def conninfo(dbname: str) -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    return psycopg.conninfo.make_conninfo(host=db["HOST"], port=db["PORT"], user=db["USER"],
                                          password=db["PASSWORD"] or None, dbname=dbname)


def maintenance(sql: str) -> None:
    with psycopg.connect(conninfo("postgres"), autocommit=True) as conn:
        conn.execute(sql)


def register_workflows() -> None:
    from django_workflows import Step, Task, Transition, Workflow, register

    steps = [f"s{n}" for n in range(STEPS)]
    register(Workflow("bench-decisions", steps=[Step(s) for s in steps[:1]] + [
        Step(s, task=Task(DECISION, candidates=["group:managers"])) for s in steps[1:]],
        transitions=[Transition(a, b) for a, b in pairwise(steps)]))
    register(Workflow("bench-manual", steps=[Step(s) for s in steps],
                      transitions=[Transition(a, b) for a, b in pairwise(steps)]))


# -- 1. complete against update_state + next -----------------------------------------------


def time_commands(seconds: float, rounds: int) -> dict[str, float]:
    from django.contrib.auth.models import Group, User
    from django.db import transaction

    from django_workflows import services

    manager = User.objects.create(username="manager")
    manager.groups.add(Group.objects.create(name="managers"))
    manager = User.objects.get(pk=manager.pk)
    decided = {"decision": "approved", "comment": "fine"}

    def complete(instance: Any) -> None:
        services.complete(instance, input=decided, user=manager)

    def update_and_next(instance: Any) -> None:
        with transaction.atomic():
            services.update_state(instance, {**instance.state, "decision": decided},
                                  user=manager)
            services.next(instance, user=manager)

    kinds = {"complete": ("bench-decisions", complete),
             "update_state + next": ("bench-manual", update_and_next)}
    rates: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(rounds):
        for name, (workflow, command) in kinds.items():
            instance = services.create(workflow, start=True, owner=manager)
            services.next(instance)  # onto the first step that waits for a decision
            done, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end and done < STEPS - 2:
                command(instance)
                done += 1
            rates[name].append(done / seconds)
    return {name: statistics.median(values) for name, values in rates.items()}


# -- 2. the inbox at two table sizes -------------------------------------------------------


def fill_tasks(alias: str, rows: int) -> None:
    """``rows`` tasks (a tenth open) of ``rows / 10`` instances, with candidate rows."""
    from django.db import connections

    open_every = 10
    with connections[alias].cursor() as cursor:
        cursor.execute(f"""
            INSERT INTO django_workflows_workflowinstance
                (id, workflow, version, status, state, current_step, snapshot, parent_id,
                 parent_step, revision, last_event, created_at, updated_at)
            SELECT gen_random_uuid(), 'bench-decisions', 1, 'running', '{{}}'::jsonb, 's1',
                   '{{}}'::jsonb, NULL, '', 1, 1, now(), now()
            FROM generate_series(1, {max(rows // 10, 1)})""")
        cursor.execute(f"""
            WITH instances AS (SELECT id, row_number() OVER () AS n
                               FROM django_workflows_workflowinstance)
            INSERT INTO django_workflows_workflowtask
                (id, instance_id, workflow, step, title, status, candidates, input, due_at,
                 overdue, created_at, completed_at, rank, due_sort)
            SELECT gen_random_uuid(), instances.id, 'bench-decisions', 's1', 'Decide',
                   CASE WHEN i % {open_every} = 0 THEN 'open' ELSE 'done' END,
                   '[]'::jsonb, NULL, now() + (i % 97) * interval '1 hour',
                   i % 13 = 0, now() - (i % 1000) * interval '1 minute', NULL,
                   CASE WHEN i % 13 = 0 THEN 0 ELSE 1 END,
                   now() + (i % 97) * interval '1 hour'
            FROM generate_series(1, {rows}) AS i
            JOIN instances ON instances.n = 1 + i % {max(rows // 10, 1)}""")
        edges, cases = 0.0, []
        for key, share in KEYS:
            edges += share
            cases.append(f"WHEN r < {edges:.3f} THEN '{key}'")
        cursor.execute(f"""
            INSERT INTO django_workflows_taskcandidate (task_id, key)
            SELECT id, CASE {' '.join(cases)} ELSE 'user:someone' END
            FROM (SELECT id, random() AS r FROM django_workflows_workflowtask
                  WHERE status = 'open') AS open_tasks""")
        cursor.execute("ANALYZE")


def time_inbox(runs: int) -> dict[str, float]:
    from django.contrib.auth.models import Group, User

    from django_workflows.services.access import acting_on_tasks

    readers = {}
    for alias in ("default", "large"):
        user = User.objects.db_manager(alias).create(username="inbox-reader")
        user.groups.add(Group.objects.db_manager(alias).get_or_create(name="managers")[0])
        readers[alias] = User.objects.db_manager(alias).get(pk=user.pk)
    times: dict[str, list[float]] = {alias: [] for alias in readers}
    for run in range(runs + 2):
        for alias, user in readers.items():
            start = time.perf_counter()
            page = list(acting_on_tasks(user).using(alias)[:50])
            elapsed = time.perf_counter() - start
            assert len(page) == 50, f"{alias}: {len(page)} tasks"
            if run >= 2:  # after two warm-up reads
                times[alias].append(elapsed * 1000)
    return {alias: statistics.median(values) for alias, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from django.conf import settings

    names = [settings.DATABASES[alias]["NAME"] for alias in ("default", "large")]
    for name in names:
        maintenance(f'DROP DATABASE IF EXISTS "{name}"')
        maintenance(f'CREATE DATABASE "{name}"')
    try:
        import django
        from django.core.management import call_command

        django.setup()
        register_workflows()
        for alias in ("default", "large"):
            call_command("migrate", database=alias, verbosity=0)
        rates = time_commands(args.seconds, args.rounds)
        fill_tasks("default", args.small)
        fill_tasks("large", args.large)
        inbox = time_inbox(args.runs)
    finally:
        from django.db import connections

        connections.close_all()
        for name in names:
            maintenance(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    ratio = rates["complete"] / rates["update_state + next"]
    print("| measure | baseline | ours | ratio | aim |")
    print("|---|---:|---:|---:|---:|")
    print(f"| complete against update_state + next in one transaction (per second) | "
          f"{rates['update_state + next']:.0f} | {rates['complete']:.0f} | {ratio:.2f} | "
          f"≥ 0.8 |")
    print(f"| a manager's inbox, first page (ms), {args.large:,} tasks against "
          f"{args.small:,} | {inbox['default']:.2f} | {inbox['large']:.2f} | "
          f"{inbox['large'] / inbox['default']:.2f} | ≤ 1.5 |")
    print(f"\n{calibration_line()}")


if __name__ == "__main__":
    main()
