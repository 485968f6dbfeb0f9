#!/usr/bin/env python
"""How late deadlines fire with nothing but ``qcluster`` running, and what the sweep costs idle.

    .venv/bin/python bench/deadlines.py                  # PostgreSQL and Redis at 127.0.0.1
    .venv/bin/python bench/deadlines.py --deadlines 200 --spread 20 --idle 20 --brokers orm

It makes a database of its own (as ``bench/operations.py`` does). For the ORM
broker and then for Redis:

(a) lateness: ``--deadlines`` instances of ``bench-deadline`` (a task due in an
    hour) are created and a ``qcluster`` (``--workers``) is started, with no
    ``workflows_sweep`` beside it. Once one of its workers' sweeper threads holds
    the lease, the deadlines are moved to fall due evenly over ``--spread``
    seconds from two seconds on, and the sweeper fires them. The
    lateness of each is the time of its ``task-overdue`` event minus its due
    time; p50, p99 and the worst.
(b) idle cost: the same cluster with nothing due, for ``--idle`` seconds, with
    the sweeper threads on and then off (``SWEEP_IN_WORKERS``); the CPU of the
    cluster's processes over that time. The sweep's share of worker time is the
    difference divided by the workers' time (workers x seconds).
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

from bench.operations import clear, cluster, database, percentile, use_broker
from django_workflows import services
from django_workflows.models import Deadline, SweepLease, WorkflowEvent
from django_workflows.services.sweep import LEASE


def sweeping_since(started) -> bool:
    """A sweeper of the cluster started at ``started`` holds the lease."""
    lease = SweepLease.objects.filter(name=LEASE).first()
    return bool(lease and lease.swept_at and lease.swept_at > started
                and lease.held_until and lease.held_until > timezone.now())


def lateness(broker: str, count: int, spread: float, workers: int) -> list[float]:
    clear(broker)
    for _ in range(count):
        services.create("bench-deadline", start=True)
    ids = list(Deadline.objects.order_by("pk").values_list("pk", flat=True))
    started = timezone.now()
    with cluster(broker, workers) as running:
        # Once the cluster sweeps (its start-up is not what is measured), the deadlines
        # are moved to fall due evenly over the spread, from two seconds on.
        limit = time.monotonic() + 60
        while not sweeping_since(started):
            running.check()
            if time.monotonic() > limit:
                raise SystemExit("no sweeper took the lease within a minute")
            time.sleep(0.1)
        first = timezone.now() + timedelta(seconds=2)
        for index, pk in enumerate(ids):
            Deadline.objects.filter(pk=pk).update(
                due_at=first + timedelta(seconds=spread * index / max(count - 1, 1)))
        due = dict(Deadline.objects.values_list("instance_id", "due_at"))
        end = time.monotonic() + spread + 60
        while Deadline.objects.exists() and time.monotonic() < end:
            running.check()
            time.sleep(0.2)
    fired = WorkflowEvent.objects.filter(type="task-overdue").values_list(
        "instance_id", "created_at")
    late = [(created - due[instance]).total_seconds() for instance, created in fired]
    if len(late) < count:
        raise SystemExit(f"only {len(late)} of {count} deadlines fired")
    return late


def idle_cpu(broker: str, workers: int, seconds: float, sweeping: bool) -> float:
    """CPU seconds of an idle cluster's processes over ``seconds``, after it settled."""
    clear(broker)
    os.environ["DWF_BENCH_SWEEP"] = "1" if sweeping else "0"
    try:
        with cluster(broker, workers) as running:
            time.sleep(5)  # started and settled (measured, not waited for: nothing to poll)
            running.check()
            before = running.cpu()
            time.sleep(seconds)
            running.check()
            return running.cpu() - before
    finally:
        os.environ.pop("DWF_BENCH_SWEEP", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deadlines", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=60.0,
                        help="seconds over which the deadlines fall due")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of each idle run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--brokers", default="orm,redis")
    options = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    with database():
        for broker in options.brokers.split(","):
            use_broker(broker)
            late = lateness(broker, options.deadlines, options.spread, options.workers)
            on = idle_cpu(broker, options.workers, options.idle, sweeping=True)
            off = idle_cpu(broker, options.workers, options.idle, sweeping=False)
            share = max(on - off, 0.0) / (options.workers * options.idle)
            rows.append((broker, late, on, off, share))
            print(f"{broker}: p50 {percentile(late, 0.5) * 1000:.0f} ms, p99 "
                  f"{percentile(late, 0.99) * 1000:.0f} ms; idle CPU {on:.2f} s with the "
                  f"sweepers, {off:.2f} s without", flush=True)
    print(f"\n{options.deadlines} deadlines due over {options.spread:.0f} s, "
          f"{options.workers} workers, idle runs of {options.idle:.0f} s, PostgreSQL "
          f"{connection.pg_version // 10000}, load average {load:.1f} before and "
          f"{os.getloadavg()[0]:.1f} after\n")
    print("| broker | lateness p50 | p99 | worst | idle cluster CPU, sweepers on / off | "
          "the sweep's share of worker time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for broker, late, on, off, share in rows:
        print(f"| {broker} | {percentile(late, 0.5) * 1000:.0f} ms | "
              f"{percentile(late, 0.99) * 1000:.0f} ms | {max(late) * 1000:.0f} ms | "
              f"{on:.2f} / {off:.2f} s | {share * 100:.2f} % |")


if __name__ == "__main__":
    main()
