#!/usr/bin/env python
"""How late schedules make their instances with nothing but ``qcluster`` running.

    .venv/bin/python bench/schedules.py                  # PostgreSQL and Redis at 127.0.0.1
    .venv/bin/python bench/schedules.py --schedules 10 --every 2 --seconds 60 --brokers orm

It makes a database of its own (as ``bench/operations.py`` does). For the ORM broker and
then for Redis, a ``qcluster`` (``--workers``, ``bench/settings_schedules.py``) declares
``--schedules`` schedules of ``bench-scheduled`` (one manual step, started), each due every
``--every`` seconds, all at the same moments (``bench/schedulesapp``), with no
``workflows_sweep`` beside it. Once one of its workers' sweeper threads holds the lease,
every due time that falls in the next ``--seconds`` is measured: the latency of a run is
its instance's ``created_at`` minus its due time (read from its reference,
``"<schedule>@<due time>"``); p50, p99 and the worst, and how many due times had no
instance (it must be 0; more than one cannot be: the reference is unique).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.db import connection
from django.utils import timezone

from bench.calibration import calibration_line
from bench.deadlines import sweeping_since
from bench.operations import clear, cluster, database, percentile, use_broker
from django_workflows.engine.schedules import EPOCH, due_of
from django_workflows.models import WorkflowInstance, WorkflowSchedule

# This process runs with bench/operations.py's settings; the clusters it starts declare the
# schedules too.
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_schedules"


def latencies(broker: str, count: int, every: int, seconds: float,
              workers: int) -> tuple[list[float], int]:
    """The latency of each measured due time's run, and how many due times had no run (a
    second run of one cannot be: its reference is unique)."""
    clear(broker)
    WorkflowSchedule.objects.all().delete()  # each case starts from no row: no catch-up
    os.environ["DWF_BENCH_SCHEDULES"], os.environ["DWF_BENCH_EVERY"] = str(count), str(every)
    started = timezone.now()
    with cluster(broker, workers) as running:
        limit = time.monotonic() + 60
        while not sweeping_since(started):
            running.check()
            if time.monotonic() > limit:
                raise SystemExit("no sweeper took the lease within a minute")
            time.sleep(0.1)
        # The due times measured: from the first one a second after the sweep began on.
        step = timedelta(seconds=every)
        first = EPOCH + step * ((timezone.now() + timedelta(seconds=1) - EPOCH) // step + 1)
        last = first + timedelta(seconds=seconds)
        while timezone.now() < last + timedelta(seconds=5):  # the last ones' runs too
            running.check()
            time.sleep(0.5)
    runs = [(due_of(reference), created) for reference, created in WorkflowInstance.objects
            .filter(workflow="bench-scheduled").values_list("reference", "created_at")]
    measured = [(due, created) for due, created in runs if due and first <= due <= last]
    expected = count * ((last - first) // step + 1)
    return [(created - due).total_seconds() for due, created in measured], \
        expected - len(measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=10)
    parser.add_argument("--every", type=int, default=2, help="seconds between due times")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="how long due times are measured")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--brokers", default="orm,redis")
    options = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    with database():
        for broker in options.brokers.split(","):
            use_broker(broker)
            late, missing = latencies(broker, options.schedules, options.every,
                                      options.seconds, options.workers)
            rows.append((broker, late, missing))
            print(f"{broker}: {len(late)} runs, p50 {percentile(late, 0.5) * 1000:.0f} ms, "
                  f"p99 {percentile(late, 0.99) * 1000:.0f} ms; {missing} due times without "
                  "a run", flush=True)
    print(f"\n{options.schedules} schedules every {options.every} s (due together) for "
          f"{options.seconds:.0f} s, {options.workers} workers, PostgreSQL "
          f"{connection.pg_version // 10000}, load average {load:.1f} before and "
          f"{os.getloadavg()[0]:.1f} after; {calibration_line()}\n")
    print("| broker | runs | due time -> instance p50 | p99 | worst | due times without a run |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for broker, late, missing in rows:
        print(f"| {broker} | {len(late)} | {percentile(late, 0.5) * 1000:.0f} ms | "
              f"{percentile(late, 0.99) * 1000:.0f} ms | {max(late, default=0) * 1000:.0f} ms | "
              f"{missing} |")


if __name__ == "__main__":
    main()
