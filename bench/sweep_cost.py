#!/usr/bin/env python
"""What one sweep costs as the deadline and attempt tables grow.

    .venv/bin/python bench/sweep_cost.py                       # 10,000 against 1,000,000 rows
    .venv/bin/python bench/sweep_cost.py --rows 10000,100000 --rounds 3

It makes a PostgreSQL database of its own (as ``bench/operations.py`` does).
For each size in ``--rows`` (smallest first), the tables are filled in SQL up to
that many deadline rows that are not due (due in a day or more; half of them
timers, half step timeouts), as many finished attempt rows, and as many kept
signals (received within the last day, so none expires, addressed by
correlations no instance waits for: each sweep reads the oldest of them to hand
over). Then, in each of ``--rounds`` rounds, ``--due`` instances are created,
half of ``bench-timer`` (a step's ``Timer``) and half of ``bench-deadline`` (a
task's due time), and their deadlines moved to now; ``--race`` instances of
``bench-signal`` wait for their signal, which is recorded as kept (what a
signal sent as its step is entered leaves: the sweep hands it over); one
``sweep()`` fires the deadlines and hands the signals over (timed), then one
sweep with nothing due (timed) and the sweeper's poll for the next deadline
(``next_deadline_at``, timed). The figures are medians over the rounds; the
last line divides the largest size's by the smallest's (the aim: at most 1.5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.db import connection
from django.utils import timezone

from bench.calibration import calibration_line
from bench.operations import database
from django_workflows import services
from django_workflows.models import (
    Attempt,
    Deadline,
    SignalStatus,
    WorkflowInstance,
    WorkflowSignal,
)
from django_workflows.services.sweep import next_deadline_at, sweep


def fill(rows: int) -> float:
    """Deadlines not due (timers and step timeouts), finished attempts and kept signals,
    up to ``rows`` of each; the seconds taken."""
    started = time.perf_counter()
    owner = WorkflowInstance.objects.filter(workflow="bench-noop").first()
    if owner is None:
        owner = services.create("bench-noop")
    deadlines, attempts = Deadline._meta.db_table, Attempt._meta.db_table
    signals = WorkflowSignal._meta.db_table
    have = Deadline.objects.filter(instance=owner).count()
    with connection.cursor() as cursor:
        while have < rows:
            count = min(200_000, rows - have)
            cursor.execute(
                f"INSERT INTO {deadlines} (instance_id, kind, token, due_at) "
                f"SELECT %s, CASE WHEN mod(n, 2) = 0 THEN 'timer' ELSE 'step-timeout' END, "
                f"'filler-' || n, now() + interval '1 day' "
                f"+ n * interval '1 second' FROM generate_series(%s, %s) n",
                [owner.pk, have + 1, have + count])
            cursor.execute(
                f"INSERT INTO {attempts} (token, instance_id, kind, target, number, status, "
                f"live_status, stop_reason, logs, worker, enqueued_at, claimed_at, "
                f"heartbeat_at, finished_at) SELECT 'filler-' || n, %s, 'operation', 'noop', "
                f"1, 'finished', '', '', '[]', 'bench', now(), now(), now(), now() "
                f"FROM generate_series(%s, %s) n", [owner.pk, have + 1, have + count])
            cursor.execute(
                f"INSERT INTO {signals} (workflow, name, message_id, correlation, payload, "
                f"status, taken_by, received_at) SELECT 'bench-signal', 'go', 'filler-' || n, "
                f"'filler-' || n, '{{}}', 'kept', '[]', "
                f"now() - mod(n, 86400) * interval '1 second' FROM generate_series(%s, %s) n",
                [have + 1, have + count])
            have += count
        # What a bulk load leaves to do (vacuum, the checkpoint) is not the cost measured.
        cursor.execute(f"VACUUM ANALYZE {deadlines}")
        cursor.execute(f"VACUUM ANALYZE {attempts}")
        cursor.execute(f"VACUUM ANALYZE {signals}")
        cursor.execute("CHECKPOINT")
    return time.perf_counter() - started


def timed(call) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def racing(count: int) -> None:
    """``count`` instances waiting for their signal, and the signal recorded as kept, as
    when it is sent while the step is entered: the sweep hands it over."""
    for n in range(count):
        key = f"race-{uuid.uuid4().hex}"
        services.next(services.create("bench-signal", state={"key": key}, start=True))
        WorkflowSignal.objects.create(workflow="bench-signal", name="go", correlation=key,
                                      message_id=key, payload={"n": n})


def measure(due: int, race: int, rounds: int) -> dict[str, float]:
    firing, idle, poll, handed = [], [], [], []
    for _ in range(rounds):
        ids = [services.create("bench-timer" if n % 2 else "bench-deadline", start=True).pk
               for n in range(due)]
        Deadline.objects.filter(instance_id__in=ids).update(due_at=timezone.now())
        racing(race)
        seconds, report = timed(sweep)
        if report.fired != due:
            raise SystemExit(f"the sweep fired {report.fired} deadlines, not {due}")
        firing.append(seconds)
        handed.append(report.signals)
        idle.append(timed(sweep)[0])
        poll.append(min(timed(next_deadline_at)[0] for _ in range(20)))
        # What a round leaves kept (none, when the sweep handed them all over) goes.
        WorkflowSignal.objects.filter(message_id__startswith="race-",
                                      status=SignalStatus.KEPT).delete()
    return {"firing": statistics.median(firing), "idle": statistics.median(idle),
            "poll": statistics.median(poll), "handed": min(handed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="10000,1000000",
                        help="deadline rows (and finished attempts) to measure at")
    parser.add_argument("--due", type=int, default=100, help="deadlines due in each sweep")
    parser.add_argument("--race", type=int, default=10,
                        help="kept signals the sweep hands over in each sweep")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    print(calibration_line(), flush=True)
    load = os.getloadavg()[0]
    sizes = sorted(int(size) for size in options.rows.split(","))
    results = {}
    with database():
        for size in sizes:
            took = fill(size)
            print(f"{size:,} deadline and attempt rows ({took:.0f} s to add them)", flush=True)
            results[size] = measure(options.due, options.race, options.rounds)
    print(f"\nPostgreSQL {connection.pg_version // 10000}, load average {load:.1f} before and "
          f"{os.getloadavg()[0]:.1f} after")
    print(f"\n| deadline rows (half timers), finished attempts, kept signals | sweep firing "
          f"{options.due} deadlines and handing over {options.race} signals ms | kept signals "
          f"handed over (fewest) | sweep with nothing due ms | next_deadline_at ms |\n"
          f"|---:|---:|---:|---:|---:|")
    for size, figures in results.items():
        print(f"| {size:,} | {figures['firing'] * 1000:.1f} | {figures['handed']:.0f} of "
              f"{options.race} | {figures['idle'] * 1000:.2f} | {figures['poll'] * 1000:.3f} |")
    small, large = results[sizes[0]], results[sizes[-1]]
    print(f"\nat {sizes[-1]:,} / at {sizes[0]:,}: firing {large['firing'] / small['firing']:.2f}, "
          f"nothing due {large['idle'] / small['idle']:.2f}, "
          f"next_deadline_at {large['poll'] / small['poll']:.2f}")


if __name__ == "__main__":
    main()
