#!/usr/bin/env python
"""How late deadlines fire with nothing but ``qcluster`` running, and what the sweep costs idle.

    .venv/bin/python bench/deadlines.py                  # PostgreSQL and Redis at 127.0.0.1
    .venv/bin/python bench/deadlines.py --deadlines 200 --spread 20 --idle 20 --brokers orm
    .venv/bin/python bench/deadlines.py --kind timer --pending 100000   # 100,000 timers wait

It makes a database of its own (as ``bench/operations.py`` does). For the ORM
broker and then for Redis:

(a) lateness: ``--deadlines`` instances of ``bench-deadline`` (a task due in an
    hour; ``--kind timer``: ``bench-timer``, a step whose ``Timer`` falls due in an
    hour) are created and a ``qcluster`` (``--workers``) is started, with no
    ``workflows_sweep`` beside it. Once one of its workers' sweeper threads holds
    the lease, the deadlines are moved to fall due evenly over ``--spread``
    seconds from two seconds on, and the sweeper fires them. The
    lateness of each is the time of its ``task-overdue`` (``timer-fire``) event
    minus its due time; p50, p99 and the worst. With ``--pending N``, N more
    instances wait meanwhile for timers that fall due a day later or more (copies
    made in SQL, bench/filler.py): the deadline table the sweeper reads holds them
    all, in the lateness and in the idle runs.
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

from bench.calibration import calibration_line
from bench.filler import FILLER, fill_waiting
from bench.operations import clear, cluster, database, percentile, use_broker
from django_workflows import services
from django_workflows.models import Deadline, SweepLease, WorkflowEvent
from django_workflows.services.sweep import LEASE


def sweeping_since(started) -> bool:
    """A sweeper of the cluster started at ``started`` holds the lease."""
    lease = SweepLease.objects.filter(name=LEASE).first()
    return bool(lease and lease.swept_at and lease.swept_at > started
                and lease.held_until and lease.held_until > timezone.now())


# --kind: (the workflow, its deadline's kind, the event that says it fired)
KINDS = {"task": ("bench-deadline", "task-due", "task-overdue"),
         "timer": ("bench-timer", "timer", "timer-fire")}


def pending(count: int) -> None:
    """``count`` instances waiting for timers a day away or more (kept by ``clear``)."""
    if not count:
        return
    started = time.perf_counter()
    template = services.create("bench-timer", start=True).pk
    fill_waiting(template, "timer", count)
    print(f"{count:,} pending timers ({time.perf_counter() - started:.0f} s to add them)",
          flush=True)


def lateness(broker: str, count: int, spread: float, workers: int,
             kind: str = "task") -> list[float]:
    workflow, deadline_kind, event = KINDS[kind]
    clear(broker)
    for _ in range(count):
        services.create(workflow, start=True)
    measured = Deadline.objects.filter(instance__workflow=workflow, kind=deadline_kind)
    ids = list(measured.order_by("pk").values_list("pk", flat=True))
    if len(ids) != count:
        raise SystemExit(f"{count} instances of {workflow} made {len(ids)} deadlines")
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
        # In one statement: none falls due before every one has its time.
        first = timezone.now() + timedelta(seconds=2)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Deadline._meta.db_table} d SET due_at = %s + (r.n - 1) * %s "
                f"* interval '1 second' FROM (SELECT id, row_number() OVER (ORDER BY id) n "
                f"FROM {Deadline._meta.db_table} WHERE id = ANY(%s)) r WHERE d.id = r.id",
                [first, spread / max(count - 1, 1), ids])
        due = dict(measured.values_list("instance_id", "due_at"))
        end = time.monotonic() + spread + 60
        while measured.exists() and time.monotonic() < end:
            running.check()
            time.sleep(0.2)
    fired = WorkflowEvent.objects.filter(type=event, instance__workflow=workflow).values_list(
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
    parser.add_argument("--kind", choices=sorted(KINDS), default="task",
                        help="what falls due: a task's due time, or a step's Timer")
    parser.add_argument("--pending", type=int, default=0,
                        help="timers waiting meanwhile, due a day later or more")
    options = parser.parse_args()
    print(calibration_line(), flush=True)
    load = os.getloadavg()[0]
    rows = []
    with database():
        pending(options.pending)
        for broker in options.brokers.split(","):
            use_broker(broker)
            late = lateness(broker, options.deadlines, options.spread, options.workers,
                            options.kind)
            on = idle_cpu(broker, options.workers, options.idle, sweeping=True)
            off = idle_cpu(broker, options.workers, options.idle, sweeping=False)
            share = max(on - off, 0.0) / (options.workers * options.idle)
            rows.append((broker, late, on, off, share))
            print(f"{broker}: p50 {percentile(late, 0.5) * 1000:.0f} ms, p99 "
                  f"{percentile(late, 0.99) * 1000:.0f} ms; idle CPU {on:.2f} s with the "
                  f"sweepers, {off:.2f} s without", flush=True)
        left = Deadline.objects.filter(instance__workflow=FILLER).count()
    print(f"\n{options.deadlines} {options.kind} deadlines due over {options.spread:.0f} s "
          f"with {left:,} timers pending, "
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
