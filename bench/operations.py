#!/usr/bin/env python
"""Background throughput: no-op workflow operations on django-q2 against raw no-op tasks.

    .venv/bin/python bench/operations.py                 # PostgreSQL and Redis at 127.0.0.1
    .venv/bin/python bench/operations.py --tasks 500 --workers 2 --profile
    .venv/bin/python bench/operations.py --brokers orm,orm-listen,redis   # NOTIFY too
    .venv/bin/python bench/operations.py --clusters 1,2 --workers 1        # scaling out
    .venv/bin/python bench/operations.py --finished 1000000                # as tables grow
    .venv/bin/python bench/operations.py --brokers tasks-db,tasks-rq --profile  # Django Tasks
    .venv/bin/python bench/operations.py --brokers orm,redis --observed     # metrics, traces on
    .venv/bin/python bench/operations.py --limits      # limits per key (bench/limits.py), ORM

It creates a database of its own (``dwf_bench_ops_<pid>``), migrates it, and
drops it at the end; Redis gets a queue of its own. ``orm-listen`` is the ORM
broker woken by NOTIFY (``django_workflows.runners.django_q.listen_broker``). For the ORM broker and
then for Redis, with the same number of workers:

(a) raw: N no-op django-q2 tasks are enqueued, then a ``qcluster`` subprocess
    is started; tasks per second while it works through them;
(b) ours: N instances of ``bench-noop`` (one auto step with one no-op
    operation) are created and started, which enqueues N attempts through our
    runner, then a new ``qcluster`` is started; operations per second;
(c) latency: with that cluster idle, instances are started one at a time at a
    steady pace; the enqueue-to-start latency of their attempts
    (``Attempt.claimed_at - enqueued_at``), p50 and p99.

A rate is counted from the rows that record a finished task, between 10 % and
90 % of the tasks, so the cluster's start-up does not count: for raw tasks the
success rows django-q2's monitor writes (``save_limit`` 0: every one), for our
operations the instances their finished attempts moved on (our runner has
django-q2 keep no success row: our rows are the record). Over the same window,
the CPU time of the cluster's process group per task (read from ``/proc``),
which depends less on what else the machine does. Raw and ours alternate ``--repeat`` times; the
best run of each counts. Every run is bounded (``--tasks``, ``--seconds``).
``--profile`` runs the worker's path for our operations in this process
(time, CPU and queries per operation, then cProfile).

``tasks-db`` and ``tasks-rq`` are the Tasks runner on Django's Tasks framework, with the
database backend (``db_worker`` processes) and RQ (``rqworker`` processes with our worker
class; ``tasks-rq-fork``: RQ's default worker; ``tasks-rq-simple``: its SimpleWorker) instead
of a qcluster; raw is a no-op Task on the same backend and worker (bench/tasks_runner.py
says how each is counted; with ``--profile``, the backend's worker loop in this process, raw
and ours).

``--limits`` measures limits per key instead (``Limit``: a hot key beside cold ones, the
most of a key running at once, and what the machinery costs operations without a limit);
bench/limits.py says how. Its brokers default to ``orm``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_operations"
OWN_DATABASE = not os.environ.get("DWF_BENCH_DB")
if OWN_DATABASE:
    os.environ["DWF_BENCH_DB"] = f"dwf_bench_ops_{os.getpid()}"
os.environ.setdefault("DWF_BENCH_QUEUE", f"dwf-bench-{os.getpid()}")

import django  # noqa: E402
import psycopg  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, connections  # noqa: E402
from django_q.conf import Conf  # noqa: E402
from django_q.models import Task  # noqa: E402
from django_q.tasks import async_task  # noqa: E402

from bench import tasks_runner  # noqa: E402
from bench.calibration import calibration_line  # noqa: E402
from bench.filler import FILLER, fill  # noqa: E402
from bench.processes import group_cpu  # noqa: E402
from bench.server_costs import (  # noqa: E402
    database_counters,
    explaining,
    print_plans,
    print_statement_times,
    reset_statements,
    statement_rows,
    statements_available,
    wal_by_relation,
)
from django_workflows import services  # noqa: E402
from django_workflows.conf import DJANGO_Q_RUNNER, workflow_settings  # noqa: E402
from django_workflows.models import Attempt, AttemptStatus, WorkflowInstance  # noqa: E402

ARTIFACTS = ROOT / "artifacts"
NOOP_TASK = "bench.opsapp.tasks.noop"
OUR_TASK = "django_workflows.runners.django_q.tasks.run_attempt"
LISTEN_BROKER = "django_workflows.runners.django_q.listen_broker.ListenORM"


# -- the database and the broker ---------------------------------------------------------


def admin(sql: str) -> None:
    db = settings.DATABASES["default"]
    with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                         password=db["PASSWORD"] or None, dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(sql)


@contextmanager
def database() -> Iterator[None]:
    name = settings.DATABASES["default"]["NAME"]
    if OWN_DATABASE:
        admin(f'DROP DATABASE IF EXISTS "{name}"')
        admin(f'CREATE DATABASE "{name}"')
    try:
        call_command("migrate", verbosity=0)
        yield
    finally:
        connections.close_all()
        if OWN_DATABASE:
            admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def use_broker(broker: str) -> None:
    """Make this process enqueue where the cluster of ``broker`` dequeues."""
    if broker in tasks_runner.BACKENDS:
        tasks_runner.use(broker)
        return
    settings.DJANGO_WORKFLOWS["RUNNER"] = DJANGO_Q_RUNNER  # after a tasks-* case
    workflow_settings.reload()
    Conf.ORM = None if broker == "redis" else "default"
    Conf.BROKER_CLASS = LISTEN_BROKER if broker == "orm-listen" else None
    Conf.REDIS = settings.REDIS
    Conf.CLUSTER_NAME = os.environ["DWF_BENCH_QUEUE"]


def redis_client():
    import redis

    return redis.Redis(**settings.REDIS)


def clear(broker: str) -> None:
    """Nothing queued, no task or workflow rows left from the case before (but the
    finished instances of ``--finished``)."""
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE django_q_ormq, django_q_task")
        if WorkflowInstance.objects.filter(workflow=FILLER).exists():
            ours = "SELECT id FROM django_workflows_workflowinstance WHERE workflow <> %s"
            for table in ("attempt", "deadline", "workflowevent"):
                cursor.execute(f"DELETE FROM django_workflows_{table} "
                               f"WHERE instance_id IN ({ours})", [FILLER])
            cursor.execute("DELETE FROM django_workflows_workflowinstance "
                           "WHERE workflow <> %s", [FILLER])
        else:
            cursor.execute("TRUNCATE django_workflows_attempt, django_workflows_deadline, "
                           "django_workflows_workflowevent, "
                           "django_workflows_workflowinstance CASCADE")
    if broker == "redis":
        drop_queued(broker)
    if tasks_runner.available():
        tasks_runner.clear(broker)


def drop_queued(broker: str) -> None:
    """Throw away the tasks still waiting in the broker."""
    if broker in tasks_runner.BACKENDS:
        tasks_runner.drop_queued(broker)
    elif broker == "redis":
        redis_client().delete(f"django_q:{os.environ['DWF_BENCH_QUEUE']}:q")
    else:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM django_q_ormq")


# -- the cluster -------------------------------------------------------------------------



class Cluster:
    def __init__(self, broker: str, workers: int, name: str = "") -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / f"bench-qcluster-{broker}{name}-{os.getpid()}.log"
        env = {**os.environ, "DWF_BENCH_BROKER": broker, "DWF_BENCH_WORKERS": str(workers),
               "PYTHONPATH": str(ROOT)}
        self._log = self.log_path.open("a")
        self.popen = subprocess.Popen([sys.executable, "-m", "django", "qcluster"], env=env,
                                      cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=15)
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=5)
        self._log.close()

    def cpu(self) -> float:
        """CPU seconds (user and system) of the cluster's processes so far, those that
        exited included (a worker is recycled after ``recycle`` tasks: its CPU is then in
        its parent's count of its children's)."""
        return group_cpu({self.popen.pid})

    def check(self) -> None:
        if self.popen.poll() is not None:
            raise SystemExit(f"qcluster exited:\n{self.log_path.read_text()[-3000:]}")

    def settle(self, seconds: float = 10.0) -> None:
        """Wait until the cluster is idle: its monitor may still be acknowledging tasks
        after the last operation finished, which a latency sample would wait behind."""
        deadline = time.monotonic() + seconds
        last = self.cpu()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.cpu()
            if now - last < 0.02:  # under a tenth of a core
                return
            last = now


@contextmanager
def cluster(broker: str, workers: int) -> Iterator[Cluster]:
    running = (tasks_runner.Workers(broker, workers) if broker in tasks_runner.BACKENDS
               else Cluster(broker, workers))
    try:
        yield running
    finally:
        running.stop()


class Clusters:
    """Several clusters on one queue, watched as one."""

    def __init__(self, broker: str, count: int, workers: int) -> None:
        self.members = [Cluster(broker, workers, f"-{n + 1}") for n in range(count)]

    def cpu(self) -> float:
        return sum(member.cpu() for member in self.members)

    def check(self) -> None:
        for member in self.members:
            member.check()

    def stop(self) -> None:
        for member in self.members:
            member.stop()


def scaling(tasks: int, workers: int, seconds: float, counts: list[int]) -> None:
    """Our operations on Redis with 1, 2... clusters of ``workers`` each: the rate, and
    the cores each cluster used while it worked."""
    use_broker("redis")
    print(f"| qcluster processes ({workers} workers each) | no-op operations/s | "
          f"cores used by each cluster | CPU ms per operation |\n|---:|---:|---|---:|")
    for count in counts:
        clear("redis")
        start_instances(tasks)
        running = Clusters("redis", count, workers)
        try:
            before = [member.cpu() for member in running.members]
            began = time.monotonic()
            rate = watch(successes(OUR_TASK), tasks, seconds, running)
            wall = time.monotonic() - began
            cores = [(member.cpu() - cpu) / wall for member, cpu in zip(running.members, before,
                                                                       strict=True)]
        finally:
            running.stop()
        print(f"| {count} | {rate.per_second:.0f} | {', '.join(f'{c:.2f}' for c in cores)} | "
              f"{rate.cpu_ms:.1f} |", flush=True)



# -- measuring ---------------------------------------------------------------------------


@dataclass
class Rate:
    done: int
    per_second: float
    wall: float  # seconds from starting the cluster to the last task done
    cpu_ms: float = float("nan")  # CPU of the cluster's processes per task, in ms


def watch(count: Callable[[], int], total: int, seconds: float, running: Cluster) -> Rate:
    """Poll ``count`` until ``total`` (or ``seconds``); the rate between 10 % and 90 %."""
    started = time.monotonic()
    low, high = max(1, total // 10), max(1, total * 9 // 10)
    marks: dict[int, tuple[float, int, float]] = {}  # mark: (time, done, cluster CPU)
    done = 0
    while done < total and time.monotonic() - started < seconds:
        running.check()
        done = count()
        now = time.monotonic()
        for mark in (low, high):
            if done >= mark and mark not in marks:
                marks[mark] = (now, done, running.cpu())
        time.sleep(0.02)
    wall = time.monotonic() - started
    if low in marks and high in marks and marks[high][1] > marks[low][1]:
        (t0, n0, c0), (t1, n1, c1) = marks[low], marks[high]
        return Rate(done, (n1 - n0) / (t1 - t0), wall, (c1 - c0) / (n1 - n0) * 1000)
    return Rate(done, done / wall if wall else 0.0, wall)


def successes(func: str) -> Callable[[], int]:
    """How many tasks of ``func`` are done: django-q2's success rows for raw tasks; for
    ours (our runner has django-q2 keep no success row), the instances their finished
    attempt moved on, in the same statement (not ``--finished``'s copies)."""
    if func == OUR_TASK:
        return WorkflowInstance.objects.filter(workflow="bench-noop", current_step="done").count
    return lambda: Task.objects.filter(func=func, success=True).count()


def raw_tasks(broker: str, tasks: int, workers: int, seconds: float) -> Rate:
    clear(broker)
    if broker in tasks_runner.BACKENDS:
        tasks_runner.enqueue_noops(broker, tasks)
        done = tasks_runner.noops_done(broker)
    else:
        for _ in range(tasks):
            async_task(NOOP_TASK)
        done = successes(NOOP_TASK)
    with cluster(broker, workers) as running:
        return watch(done, tasks, seconds, running)


def start_instances(count: int, pace: float | None = None) -> list[str]:
    ids = []
    for _ in range(count):
        ids.append(str(services.create("bench-noop", start=True).pk))
        if pace:
            time.sleep(pace)
    return ids


def operations(broker: str, tasks: int, workers: int, seconds: float,
               latency_samples: int = 0, pace: float = 0.05) -> tuple[Rate, list[float]]:
    clear(broker)
    start_instances(tasks)
    with cluster(broker, workers) as running:
        rate = watch(successes(OUR_TASK), tasks, seconds, running)
        finished = Attempt.objects.filter(status=AttemptStatus.FINISHED,
                                          instance__workflow="bench-noop").count()
        moved = WorkflowInstance.objects.filter(workflow="bench-noop",
                                                current_step="done").count()
        if rate.done == tasks and (finished, moved) != (tasks, tasks):
            raise SystemExit(f"{tasks} tasks ran but {finished} attempts finished and "
                             f"{moved} instances moved on")
        if not latency_samples:
            return rate, []
        # Latency: the cluster is idle (what a bounded run left queued is thrown away);
        # start instances one at a time.
        drop_queued(broker)
        running.settle()
        Attempt.objects.all().delete()
        ids = start_instances(latency_samples, pace)
        deadline = time.monotonic() + seconds
        while Attempt.objects.filter(status=AttemptStatus.FINISHED).count() < len(ids):
            running.check()
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        waits = [(claimed - enqueued).total_seconds() for claimed, enqueued in
                 Attempt.objects.filter(claimed_at__isnull=False)
                 .values_list("claimed_at", "enqueued_at")]
    return rate, waits


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# -- profiling the worker's path ---------------------------------------------------------


class Recorder:
    """A runner that only remembers tokens: the profile runs them itself."""

    tokens: list[str] = []

    def enqueue(self, tokens):
        Recorder.tokens.extend(tokens)


def profile(count: int) -> None:
    from django.test.utils import override_settings

    from django_workflows.runners.worker import run_attempt

    clear("orm")
    Recorder.tokens = []
    runner = f"{__name__}.Recorder" if __name__ != "__main__" else "__main__.Recorder"
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": runner}):
        start_instances(count)
    tokens = list(Recorder.tokens)
    queries = []

    def count_queries(execute, sql, params, many, context):
        queries.append(sql.split()[0])
        return execute(sql, params, many, context)

    # One operation first (its statements prepared, their plans made), half timed, half
    # profiled, and one last run under EXPLAIN.
    first, explained, tokens = tokens[0], tokens[-1], tokens[1:-1]
    timed, tokens = tokens[:len(tokens) // 2], tokens[len(tokens) // 2:]
    half = len(timed)
    run_attempt(first, heartbeat_thread=True)
    counted = statements_available()
    if counted:
        reset_statements()
    backend, wal = database_counters()
    started, cpu = time.perf_counter(), time.process_time()
    for token in timed:  # timed without the profiler
        run_attempt(token, heartbeat_thread=True)
    elapsed = (time.perf_counter() - started) / half
    cpu = (time.process_time() - cpu) / half
    backend_after, wal_after = database_counters()
    statements = statement_rows() if counted else []  # before any other statement runs
    profiler = cProfile.Profile()
    with connection.execute_wrapper(count_queries):
        profiler.enable()
        for token in tokens:
            run_attempt(token, heartbeat_thread=True)
        profiler.disable()
    kinds = ", ".join(f"{kind} {number / len(tokens):.1f}"
                      for kind, number in sorted(_tally(queries).items()))
    print(f"\nThe worker's path in one process: {half} operations, "
          f"{elapsed * 1000:.2f} ms each, of which {cpu * 1000:.2f} ms of this process's CPU "
          f"and {(backend_after - backend) / half * 1000:.2f} ms of its PostgreSQL backend's, "
          f"{(wal_after - wal) / half:,.0f} bytes of WAL; {len(queries) / len(tokens):.1f} "
          f"queries each ({kinds}); {calibration_line()}")
    wal_by_relation(wal, wal_after, half)
    if counted:
        print_statement_times(statements, half)
    plans: list[tuple[str, str]] = []
    with explaining(plans):
        run_attempt(explained, heartbeat_thread=False)
    print_plans(plans)
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(12)
    stats.sort_stats("cumulative").print_stats("django_workflows", 40)


def cpu_ratio(raw: Rate, ours: Rate) -> float:
    """Our cluster's CPU per operation over raw's per task, in the same run: issue 26's
    aim (what the table's best-of figures, each from its own run, do not show)."""
    return ours.cpu_ms / raw.cpu_ms if raw.cpu_ms else float("nan")


def _tally(items: list[str]) -> dict[str, int]:
    tally: dict[str, int] = {}
    for item in items:
        tally[item] = tally.get(item, 0) + 1
    return tally


# -- main --------------------------------------------------------------------------------


FEW_FINISHED = 10_000


def flat(finished: int, tasks: int, workers: int, seconds: float, repeat: int) -> None:
    """Our operations on Redis with 10,000 and then ``finished`` finished instances (with
    their events and attempts) in the tables; raw tasks beside them as the machine's load."""
    use_broker("redis")
    template = None
    rows = []
    for total in (FEW_FINISHED, finished):
        if template is None:  # one instance run through, copied (bench/filler.py)
            operations("redis", 1, workers, seconds)
            template = WorkflowInstance.objects.get(workflow="bench-noop").pk
        started = time.perf_counter()
        fill(template, total)
        # The runs below delete their own instances, the template too: a copy is the next.
        template = WorkflowInstance.objects.filter(workflow=FILLER).values_list(
            "pk", flat=True).first()
        print(f"{total:,} finished instances in the tables "
              f"({time.perf_counter() - started:.0f} s to add them)", flush=True)
        raws = [raw_tasks("redis", tasks, workers, seconds) for _ in range(repeat)]
        ours = [operations("redis", tasks, workers, seconds)[0] for _ in range(repeat)]
        rows.append((total, max(r.per_second for r in raws), max(r.per_second for r in ours)))
    print("\n| finished instances | raw no-op tasks/s | no-op operations/s |\n|---:|---:|---:|")
    for total, raw, ours_rate in rows:
        print(f"| {total:,} | {raw:.0f} | {ours_rate:.0f} |")
    (_, raw_few, few), (_, raw_many, many) = rows
    print(f"\nours at {finished:,} / at {FEW_FINISHED:,}: {many / few:.2f} (raw: "
          f"{raw_many / raw_few:.2f}); ours/raw at {finished:,} over ours/raw at "
          f"{FEW_FINISHED:,}: {(many / raw_many) / (few / raw_few):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000, help="tasks (operations) per run")
    parser.add_argument("--workers", type=int, default=2, help="django-q2 workers")
    parser.add_argument("--seconds", type=float, default=20.0, help="time bound per run")
    parser.add_argument("--latency-samples", type=int, default=100)
    parser.add_argument("--pace", type=float, default=0.05,
                        help="seconds between instances in the latency run")
    parser.add_argument("--brokers", default=None,
                        help="comma-separated; \"\" for none (with --profile: only that); "
                             "default orm,redis (orm with --limits)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each (raw, ours, raw, ours...): the best counts")
    parser.add_argument("--observed", action="store_true",
                        help="after each run of ours, the same with the workers' metrics and "
                             "traces on (the metrics and otel extras)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile the worker's path in this process")
    parser.add_argument("--clusters", metavar="COUNTS",
                        help="only our operations on Redis with this many qcluster processes "
                             "(e.g. 1,2), each with --workers workers")
    parser.add_argument("--finished", type=int, metavar="N",
                        help="only Redis, with 10,000 and then N finished instances in the "
                             "tables")
    parser.add_argument("--limits", action="store_true",
                        help="only limits per key (bench/limits.py)")
    parser.add_argument("--limit-workers", type=int, default=8,
                        help="with --limits: workers of the hot-key runs")
    parser.add_argument("--limit-attempts", type=int, default=400,
                        help="with --limits: attempts of a hot-key run, 90 %% on the hot key")
    parser.add_argument("--before", default="68d8982^", metavar="COMMIT",
                        help="with --limits: the code before limits, run beside (\"\": not)")
    options = parser.parse_args()
    if options.brokers is None:
        options.brokers = "orm" if options.limits else "orm,redis"
    if options.limits:
        from bench import limits

        with database():
            limits.run(sys.modules[__name__], options)
        return
    if options.finished:
        with database():
            flat(options.finished, options.tasks, options.workers, options.seconds,
                 options.repeat)
        return
    if options.clusters:
        with database():
            scaling(options.tasks, options.workers, options.seconds,
                    [int(count) for count in options.clusters.split(",")])
        return
    brokers = [broker for broker in options.brokers.split(",") if broker]  # "": none
    rows = []
    observed: dict[tuple[str, str], list[Any]] = {}
    load = os.getloadavg()[0]
    with database():
        for broker in brokers:
            use_broker(broker)
            raws, ours, waits = [], [], []
            for run in range(options.repeat):
                raws.append(raw_tasks(broker, options.tasks, options.workers, options.seconds))
                last = run == options.repeat - 1
                rate, waits = operations(broker, options.tasks, options.workers,
                                         options.seconds,
                                         options.latency_samples if last else 0, options.pace)
                ours.append(rate)
                print(f"{broker} run {run + 1}: raw {raws[-1].per_second:.0f} tasks/s "
                      f"({raws[-1].cpu_ms:.1f} ms CPU each), ours {rate.per_second:.0f} "
                      f"operations/s ({rate.cpu_ms:.1f} ms CPU each, "
                      f"{cpu_ratio(raws[-1], rate):.2f} of raw's)", flush=True)
                if options.observed:
                    for mode in OBSERVE_MODES:
                        seen = observed_operations(mode, broker, options)
                        observed.setdefault((broker, mode), []).append(seen)
                        print(f"{broker} run {run + 1}, observed ({mode}): "
                              f"{seen.per_second:.0f} operations/s ({seen.cpu_ms:.1f} ms "
                              "CPU each)", flush=True)
            rows.append((broker, raws, ours, waits))
        if options.profile:
            use_broker("orm")
            profile(min(options.tasks, 1000))
            for broker in brokers:
                if broker in tasks_runner.BACKENDS:
                    tasks_runner.profile(broker, min(options.tasks, 1000), start_instances)
    if not rows:
        return
    print(f"\n{options.workers} workers, {options.tasks} tasks per run, best of "
          f"{options.repeat} runs each, PostgreSQL {connection.pg_version // 10000}, persistent "
          f"connections, load average {load:.1f} before and {os.getloadavg()[0]:.1f} after; "
          f"{calibration_line()}\n")
    print("| broker | raw no-op tasks/s | no-op operations/s | ratio | cluster CPU per task, "
          "raw / ours | CPU ours / raw, run by run | enqueue-to-start p50 | p99 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for broker, raws, ours, waits in rows:
        raw, our = max(r.per_second for r in raws), max(r.per_second for r in ours)
        ratio = our / raw if raw else float("nan")
        raw_cpu, our_cpu = min(r.cpu_ms for r in raws), min(r.cpu_ms for r in ours)
        ratios = sorted(cpu_ratio(r, o) for r, o in zip(raws, ours, strict=True))
        short = [r.done for r in (*raws, *ours) if r.done < options.tasks]
        note = f" (bounded: a run did only {min(short)})" if short else ""
        print(f"| {broker} | {raw:.0f} | {our:.0f} | {ratio:.2f} | {raw_cpu:.1f} / "
              f"{our_cpu:.1f} ms | {ratios[0]:.2f} to {ratios[-1]:.2f} | "
              f"{percentile(waits, 0.5) * 1000:.0f} ms | "
              f"{percentile(waits, 0.99) * 1000:.0f} ms |{note}")
    if observed:
        print("\n| broker | observed / ours (no exporter) | with the in-memory exporter | "
              "cluster CPU per operation, ours / observed / in-memory |\n| --- | ---: | ---: "
              "| ---: |")
        for broker, _raws, ours, _waits in rows:
            best = {mode: max(r.per_second for r in observed[broker, mode])
                    for mode in OBSERVE_MODES}
            our = max(r.per_second for r in ours)
            cpu = " / ".join(f"{min(r.cpu_ms for r in runs):.1f}" for runs in (
                ours, *(observed[broker, mode] for mode in OBSERVE_MODES)))
            print(f"| {broker} | {best['on'] / our:.2f} | {best['memory'] / our:.2f} | "
                  f"{cpu} ms |")
    for broker, _raws, _ours, waits in rows:
        if waits:
            print(f"{broker}: {len(waits)} latency samples, mean "
                  f"{statistics.mean(waits) * 1000:.0f} ms")


# --observed: the workers with metrics and traces on (bench/settings_operations.py reads
# DWF_BENCH_OBSERVE), without an exporter and with the in-memory one.
OBSERVE_MODES = ("on", "memory")


def observed_operations(mode: str, broker: str, options: argparse.Namespace) -> Any:
    """A run of our operations with the workers observing; each with a multiprocess
    directory of its own, as prometheus-client's multiprocess mode wants."""
    with tempfile.TemporaryDirectory() as directory:
        os.environ.update(DWF_BENCH_OBSERVE=mode, PROMETHEUS_MULTIPROC_DIR=directory)
        try:
            rate, _ = operations(broker, options.tasks, options.workers, options.seconds, 0,
                                 options.pace)
        finally:
            del os.environ["DWF_BENCH_OBSERVE"], os.environ["PROMETHEUS_MULTIPROC_DIR"]
    return rate


if __name__ == "__main__":
    main()
