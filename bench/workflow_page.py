#!/usr/bin/env python
"""Cost of the admin's workflow page at 10,000 and at 1,000,000 instances of the workflow.

    .venv/bin/python bench/workflow_page.py               # a few minutes
    .venv/bin/python bench/workflow_page.py --large 200000 --runs 9

It creates two PostgreSQL databases of its own (``dwf_bench_page_<pid>_small`` and
``_large``) and fills each in a process of its own (``--fill``): a few instances of a
three-step workflow made through the services (running at each step, failed at the
second with an error event, completed), then copies of them in SQL by
``bench/filler.py``, rows, events and all, in the shares of ``SHARES``. Then it times
the workflow's page (``/admin/.../definitions/bench-filler/``) as a logged-in superuser
through Django's test client, for each period: each figure is the median of ``--runs``
requests after two warm-up requests, the two sizes taking turns request by request, so
that a busy machine slows both alike. It prints a Markdown table: the time at each size
and their ratio (large / small; the aim is at most 1.5), and the load average. Both
databases are dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import admin_changelist as changelist_bench  # noqa: E402  (its helpers)
from bench.calibration import calibration_line  # noqa: E402
from bench.filler import FILLER  # noqa: E402

# Names of our own (the import above set the changelist's); a --fill process is given its.
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_admin"
os.environ["DWF_BENCH_DB"] = (os.environ.get("DWF_BENCH_FILL_DB")
                              or f"dwf_bench_page_{os.getpid()}_small")
os.environ["DWF_BENCH_DB_LARGE"] = f"dwf_bench_page_{os.getpid()}_large"

STEPS = ("receive", "check", "ship")
# What the copies are: (what their template did, share of the instances), filled in order.
SHARES = (("running at receive", 0.10), ("running at check", 0.10),
          ("failed at check", 0.05), ("completed", 0.75))
PERIODS = ("24h", "7d", "30d")


def _check(ctx):
    if ctx.state.get("bad"):
        raise RuntimeError(f"Address unknown: {ctx.state['bad']}")


def register_workflow() -> None:
    from django_workflows import Step, Transition, Workflow, register

    register(Workflow(id=FILLER, title="Send a parcel", initial={"bad": None},
                      steps=[Step("receive"), Step("check", enter=_check), Step("ship")],
                      transitions=[Transition("receive", "check"),
                                   Transition("check", "ship")]))


def template(kind: str) -> object:
    """An instance that did ``kind`` (a name of SHARES), made through the services."""
    from django_workflows import services

    instance = services.create(FILLER, state={"bad": "Nowhere" if "failed" in kind else None},
                               start=True)
    moves = {"running at receive": 0, "running at check": 1, "failed at check": 1,
             "completed": 3}[kind]
    for _ in range(moves):
        time.sleep(0.01)  # stays that last a little
        instance = services.next(instance)
    return instance.pk


def fill_database(rows: int) -> None:
    """Migrate the default database and fill it with ``rows`` instances of FILLER."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from bench.filler import fill

    register_workflow()
    call_command("migrate", verbosity=0)
    get_user_model().objects.create_superuser("root", "root@example.com", "root")
    started, total = time.perf_counter(), 0.0
    for kind, share in SHARES:
        total += share
        fill(template(kind), round(rows * total))
    print(f"filled {rows:,} instances in {time.perf_counter() - started:.0f}s",
          file=sys.stderr, flush=True)


def run(small: int, large: int, runs: int) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    register_workflow()
    clients: dict[str, Client] = {}
    for alias in changelist_bench.ALIASES:
        changelist_bench.use(alias)
        clients[alias] = Client()
        clients[alias].force_login(get_user_model().objects.get(username="root"))
    url = reverse("admin:django_workflows_workflowinstance_workflow", args=[FILLER])
    figures = {period: changelist_bench.timed(clients, f"{url}?period={period}", runs)
               for period in PERIODS}
    load = os.getloadavg()

    print(f"\nWorkflow page, median of {runs} requests (ms), PostgreSQL, one workflow of "
          f"{len(STEPS)} steps:\n")
    print(f"| period | {small:,} instances | {large:,} instances | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for period, found in figures.items():
        at_small, at_large = found["default"] * 1000, found["large"] * 1000
        print(f"| {period} | {at_small:.1f} | {at_large:.1f} | {at_large / at_small:.2f} |")
    worst = max(found["large"] / found["default"] for found in figures.values())
    print(f"\nworst ratio: {worst:.2f} (aim: at most 1.5); load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {calibration_line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000, help="instances of the first")
    parser.add_argument("--large", type=int, default=1_000_000, help="instances of the second")
    parser.add_argument("--runs", type=int, default=9, help="timed requests per page")
    parser.add_argument("--fill", type=int, metavar="ROWS",
                        help="(internal) fill DWF_BENCH_FILL_DB with ROWS instances, stop")
    options = parser.parse_args()
    if options.fill is not None:
        fill_database(options.fill)
        return
    if options.large <= options.small:
        parser.error("--large must be more than --small")
    names = {alias: os.environ[variable] for alias, variable
             in zip(changelist_bench.ALIASES, ("DWF_BENCH_DB", "DWF_BENCH_DB_LARGE"),
                    strict=True)}
    for name in names.values():
        changelist_bench.maintenance(f'CREATE DATABASE "{name}"')
    try:
        for alias, rows in zip(changelist_bench.ALIASES, (options.small, options.large),
                               strict=True):
            # bench/filler.py writes through the default connection: a process per size.
            subprocess.run([sys.executable, __file__, "--fill", str(rows)], check=True,
                           env={**os.environ, "DWF_BENCH_FILL_DB": names[alias]})
        run(options.small, options.large, options.runs)
    finally:
        from django.db import connections

        connections.close_all()
        for name in names.values():
            changelist_bench.maintenance(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
