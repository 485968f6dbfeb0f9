#!/usr/bin/env python
"""Cost of the admin's instances changelist at 10,000 and at 1,000,000 rows.

    .venv/bin/python bench/admin_changelist.py                # about two minutes
    .venv/bin/python bench/admin_changelist.py --large 200000 --runs 9

It creates two PostgreSQL databases of its own (``dwf_bench_admin_<pid>_small``
and ``_large``), migrates them, and fills ``django_workflows_workflowinstance``
with ``--small`` rows in the first and ``--large`` rows in the second (one
``INSERT ... SELECT generate_series`` each, then ``VACUUM ANALYZE``). Then it
times the changelist page as a logged-in superuser through Django's test
client (the whole request: queries, template, response), with the default
ordering and with filters: each figure is the median of ``--runs`` requests
after two warm-up requests, the two sizes taking turns request by request, so
that a busy machine slows both alike. It prints a Markdown table: the time at
each size and their ratio (large / small; the aim is at most 1.5), and the
same page with Django's defaults (``/plain-admin/``: a full ``COUNT(*)``,
``SELECT DISTINCT`` filter choices and date hierarchy) as the baseline. Both
databases are dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_admin"
os.environ["DWF_BENCH_DB"] = f"dwf_bench_admin_{os.getpid()}_small"
os.environ["DWF_BENCH_DB_LARGE"] = f"dwf_bench_admin_{os.getpid()}_large"
ALIASES = ("default", "large")  # the small table, the large table

import psycopg  # noqa: E402

from bench.calibration import calibration_line  # noqa: E402

WORKFLOWS = ("bench-order", "bench-signup", "bench-expense", "bench-ticket")
STEPS = 6
OWNERS = 50
# Status shares of a table that has run for a while: mostly finished instances.
STATUSES = (("completed", 0.62), ("cancelled", 0.08), ("running", 0.14), ("idle", 0.06),
            ("blocked", 0.04), ("failed", 0.04), ("rolling-back", 0.02))


def database(alias: str) -> str:
    from django.conf import settings

    return settings.DATABASES[alias]["NAME"]


def conninfo(dbname: str) -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    return psycopg.conninfo.make_conninfo(
        host=db["HOST"], port=db["PORT"], user=db["USER"], password=db["PASSWORD"] or None,
        dbname=dbname)


def maintenance(sql: str) -> None:
    with psycopg.connect(conninfo("postgres"), autocommit=True) as conn:
        conn.execute(sql)


def use(alias: str) -> None:
    """Send every query of the next requests to ``alias``."""
    from django.conf import settings

    settings.SIZE.alias = alias


def register_workflows() -> None:
    from django_workflows import Step, Transition, Workflow, register

    for workflow_id in WORKFLOWS:
        steps = [f"step-{n}" for n in range(STEPS)]
        register(Workflow(id=workflow_id, title=workflow_id.replace("bench-", "").title(),
                          steps=[Step(s) for s in steps],
                          transitions=[Transition(a, b) for a, b in pairwise(steps)]))


def status_case() -> str:
    """A CASE over random() that picks a status with the shares of STATUSES."""
    parts, edge = [], 0.0
    for status, share in STATUSES[:-1]:
        edge += share
        parts.append(f"WHEN r < {edge:.4f} THEN '{status}'")
    return f"CASE {' '.join(parts)} ELSE '{STATUSES[-1][0]}' END"


def fill(alias: str, rows: int, owner_ids: list[int]) -> float:
    """Insert ``rows`` rows in one statement, then vacuum and analyze; seconds taken."""
    workflows = "ARRAY[" + ",".join(f"'{w}'" for w in WORKFLOWS) + "]"
    owners = "ARRAY[" + ",".join(str(pk) for pk in owner_ids) + "]::bigint[]"
    sql = f"""
        INSERT INTO django_workflows_workflowinstance
            (id, workflow, version, status, state, current_step, snapshot, parent_id,
             parent_step, owner_id, revision, last_event, created_at, updated_at,
             started_at, completed_at)
        SELECT gen_random_uuid(), ({workflows})[1 + i %% {len(WORKFLOWS)}], 1, status,
               jsonb_build_object('customer', 'customer-' || i, 'email',
                                  'customer' || i || '@example.com', 'plan', 'pro',
                                  'items', jsonb_build_array(i %% 7, i %% 11, i %% 13),
                                  'notes', 'A note of a reasonable length for a state.'),
               'step-' || (i %% {STEPS}),
               jsonb_build_object('completed_steps', jsonb_build_array('step-0'),
                                  'history', jsonb_build_array('step-0', 'step-1'),
                                  'errors', '[]'::jsonb, 'operations', '[]'::jsonb),
               NULL, '',
               CASE WHEN i %% 10 = 0 THEN NULL ELSE ({owners})[1 + i %% {len(owner_ids)}] END,
               1 + i %% 40, 2 + i %% 40, updated - interval '3 days', updated,
               updated - interval '3 days',
               CASE WHEN status IN ('completed', 'cancelled') THEN updated END
        FROM (SELECT i, r, {status_case()} AS status,
                     now() - random() * interval '730 days' AS updated
              FROM (SELECT i, random() AS r
                    FROM generate_series(%s::bigint, %s::bigint) AS i) AS numbers
             ) AS rows
    """
    started = time.perf_counter()
    with psycopg.connect(conninfo(database(alias)), autocommit=True) as conn:
        conn.execute(sql, [1, rows])
        conn.execute("VACUUM ANALYZE django_workflows_workflowinstance")
    return time.perf_counter() - started


def timed(clients: dict[str, object], url: str, runs: int) -> dict[str, float]:
    """Median seconds of ``runs`` requests of ``url`` at each size, the sizes in turns."""
    times: dict[str, list[float]] = {alias: [] for alias in clients}
    for run in range(runs + 2):  # two warm-up requests
        for alias, client in clients.items():
            use(alias)
            started = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - started
            assert response.status_code == 200, (url, alias, response.status_code)
            if run >= 2:
                times[alias].append(elapsed)
    return {alias: statistics.median(values) for alias, values in times.items()}


def cases(owner_id: int) -> list[tuple[str, str]]:
    admin = "/admin/django_workflows/workflowinstance/"
    plain = "/plain-admin/django_workflows/workflowinstance/"
    return [
        ("default ordering (newest update first)", admin),
        ("status = failed", admin + "?status__exact=failed"),
        ("workflow = bench-order", admin + "?workflow=bench-order"),
        ("workflow + current step", admin + "?workflow=bench-ticket&current_step=step-3"),
        (f"owner = one of {OWNERS} users", admin + f"?owner={owner_id}"),
        ("page 100", admin + "?p=100"),
        ("baseline: Django's defaults", plain),
        ("baseline: Django's defaults, status = failed", plain + "?status__exact=failed"),
    ]


def run(small: int, large: int, runs: int) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    register_workflows()
    user_model = get_user_model()
    clients: dict[str, Client] = {}
    for alias, rows in zip(ALIASES, (small, large), strict=True):
        use(alias)
        call_command("migrate", database=alias, verbosity=0)
        root = user_model.objects.create_superuser("root", "root@example.com", "root")
        owner_ids = [user_model.objects.create_user(f"owner{n}").pk for n in range(OWNERS)]
        seconds = fill(alias, rows, owner_ids)
        print(f"filled {rows:,} rows in {seconds:.1f}s", file=sys.stderr, flush=True)
        clients[alias] = Client()
        clients[alias].force_login(root)
    table = cases(owner_ids[1])  # owner_ids[0] owns nothing: rows with i % 10 == 0 have none
    figures = {name: timed(clients, url, runs) for name, url in table}

    print(f"\nAdmin changelist, median of {runs} requests (ms), PostgreSQL, "
          f"{len(WORKFLOWS)} workflows, {OWNERS} owners:\n")
    print(f"| page | {small:,} rows | {large:,} rows | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name, _url in table:
        at_small, at_large = figures[name]["default"] * 1000, figures[name]["large"] * 1000
        print(f"| {name} | {at_small:.1f} | {at_large:.1f} | {at_large / at_small:.2f} |")
    worst = max(figures[n]["large"] / figures[n]["default"] for n, _ in table
                if not n.startswith("baseline"))
    print(f"\nworst ratio of our pages: {worst:.2f} (aim: at most 1.5); {calibration_line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000, help="rows of the first run")
    parser.add_argument("--large", type=int, default=1_000_000, help="rows of the second run")
    parser.add_argument("--runs", type=int, default=9, help="timed requests per page")
    options = parser.parse_args()
    if options.large <= options.small:
        parser.error("--large must be more than --small")
    for alias in ALIASES:
        maintenance(f'CREATE DATABASE "{database(alias)}"')
    try:
        run(options.small, options.large, options.runs)
    finally:
        from django.db import connections

        connections.close_all()
        for alias in ALIASES:
            maintenance(f'DROP DATABASE IF EXISTS "{database(alias)}" WITH (FORCE)')


if __name__ == "__main__":
    main()
