"""The Tasks runner in ``bench/operations.py``: ``--brokers tasks-db,tasks-rq``.

    .venv/bin/python bench/operations.py --brokers orm,redis,tasks-db,tasks-rq
    .venv/bin/python bench/operations.py --brokers tasks-db,tasks-rq --profile
    .venv/bin/python bench/operations.py --brokers tasks-rq,tasks-rq-fork,tasks-rq-simple

Imported by bench/operations.py after ``django.setup()`` (its settings, with Django's
Tasks framework configured: ``bench/settings_operations.py``). For each backend, with
``--workers`` worker processes (``db_worker --interval 0.05``, as django-q2 polls every
0.05 s; ``rqworker --with-scheduler`` with our worker class, which runs our Tasks in its own
process and forks a work horse for every other Task, raw ones included; ``tasks-rq-fork``:
RQ's default worker, which forks for every Task; ``tasks-rq-simple``: RQ's SimpleWorker,
which forks for none):

(a) raw: N no-op Tasks (``bench.opsapp.noop_task.noop``) on the same backend and queue,
    counted from the backend's own record of a finished Task (the database backend's
    ``SUCCESSFUL`` rows; RQ's finished-job registry);
(b) ours and (c) latency as for django-q2 (bench/operations.py), through
    ``django_workflows.runners.tasks.Runner``.

``--profile`` adds, for each backend given, the backend's own worker loop in this process
(``db_worker``'s ``Worker`` in batch mode; RQ's ``SimpleWorker`` in burst mode, which does
not fork) over N raw no-op Tasks and then N of our operations: ms and CPU of each, and a
cProfile of ours split into the backend's part and ours (``runners/worker.py``). For RQ,
also what RQ's default worker does: each Task in a process forked for it, which starts with
no database connection. Raw no-op Tasks and then our attempt Tasks, each called in a child
forked from this process (the connections closed first, as a work horse has none): ms and
the children's CPU per Task, and a cProfile of ours made in the children.
"""

from __future__ import annotations

import cProfile
import logging
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, connections

from bench.processes import group_cpu
from django_workflows.conf import TASKS_RUNNER, workflow_settings

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
# --brokers name -> the TASKS alias. tasks-rq: RQ with our worker class (rq_worker.Worker:
# our Tasks in the worker's process, every other Task, raw ones too, in a forked work horse);
# tasks-rq-fork: RQ's default worker, which forks a work horse for every Task;
# tasks-rq-simple: RQ's SimpleWorker, which runs every Task in its own process (no fork).
BACKENDS = {"tasks-db": "default", "tasks-rq": "rq", "tasks-rq-fork": "rq",
            "tasks-rq-simple": "rq"}
RQ_WORKER_CLASSES = {"tasks-rq": "django_workflows.runners.tasks.rq_worker.Worker",
                     "tasks-rq-simple": "rq.worker.SimpleWorker"}
NOOP = "bench.opsapp.noop_task.noop"


def available() -> bool:
    return "django_tasks_db" in settings.INSTALLED_APPS


def queue() -> str:
    return str(workflow_settings.TASKS_QUEUE)


def use(broker: str) -> None:
    """This process hands its work to the Tasks runner on ``broker``'s backend."""
    settings.DJANGO_WORKFLOWS.update(RUNNER=TASKS_RUNNER, TASKS_BACKEND=BACKENDS[broker])
    workflow_settings.reload()
    from django_workflows.runners.tasks import sweep_chain

    sweep_chain._next_look = 0.0


def rq_queue() -> Any:
    import django_rq
    from django_tasks_rq import Job

    return django_rq.get_queue(queue(), job_class=Job)


def clear(broker: str) -> None:
    """Nothing queued, deferred or finished of the backends' (both: a case leaves the
    other's Tasks behind as much as its own)."""
    from django_tasks_db.models import DBTaskResult

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {DBTaskResult._meta.db_table}")
    drop_queued("tasks-rq")


def drop_queued(broker: str) -> None:
    if broker == "tasks-db":
        from django_tasks_db.models import DBTaskResult

        DBTaskResult.objects.filter(status="READY").delete()
        return
    from rq.registry import FinishedJobRegistry, ScheduledJobRegistry, StartedJobRegistry

    rq = rq_queue()
    client = rq.connection
    ids = set(rq.get_job_ids())
    for registry in (ScheduledJobRegistry, StartedJobRegistry, FinishedJobRegistry):
        ids.update(registry(queue=rq).get_job_ids())
    keys = [key for id in ids for key in (f"rq:job:{id}", f"rq:results:{id}")]
    keys += client.scan_iter(f"rq:*{queue()}*")
    if keys:
        client.delete(*keys)


def enqueue_noops(broker: str, count: int) -> None:
    from bench.opsapp.noop_task import noop

    task = noop.using(backend=BACKENDS[broker], queue_name=queue())
    for _ in range(count):
        task.enqueue()


def noops_done(broker: str) -> Callable[[], int]:
    """How many raw no-op Tasks finished, by the backend's own record."""
    if broker == "tasks-db":
        from django_tasks_db.models import DBTaskResult

        return DBTaskResult.objects.filter(task_path=NOOP, status="SUCCESSFUL").count
    from rq.registry import FinishedJobRegistry

    registry = FinishedJobRegistry(queue=rq_queue())
    return lambda: registry.get_job_count(cleanup=False)


# -- the worker processes -------------------------------------------------------------------


class Workers:
    """``count`` worker processes of ``broker``'s backend, watched as one (the shape of
    bench/operations.py's ``Cluster``)."""

    def __init__(self, broker: str, count: int) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        if broker == "tasks-db":
            args = ["db_worker", "--queue-name", queue(), "--interval", "0.05",
                    "--no-startup-delay", "--no-reload", "--verbosity", "0"]
        else:
            args = ["rqworker", "--with-scheduler", "--job-class", "django_tasks_rq.Job",
                    "--verbosity", "0", queue()]
            if broker in RQ_WORKER_CLASSES:
                args[1:1] = ["--worker-class", RQ_WORKER_CLASSES[broker]]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DWF_BENCH_RUNNER": TASKS_RUNNER,
               "DWF_BENCH_TASKS_BACKEND": BACKENDS[broker]}
        self.log_paths = [ARTIFACTS / f"bench-{broker}-{n + 1}-{os.getpid()}.log"
                          for n in range(count)]
        self._logs = [path.open("a") for path in self.log_paths]
        self.popens = [subprocess.Popen([sys.executable, "-m", "django", *args], env=env,
                                        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True) for log in self._logs]

    def stop(self) -> None:
        for popen in self.popens:
            if popen.poll() is None:
                popen.send_signal(signal.SIGTERM)
        for popen in self.popens:
            with suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=15)
            with suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait(timeout=5)
        for log in self._logs:
            log.close()

    def cpu(self) -> float:
        """CPU seconds of the workers' process groups so far (RQ's forked processes too,
        once reaped: in their parent's children's count)."""
        return group_cpu({popen.pid for popen in self.popens})

    def check(self) -> None:
        for popen, path in zip(self.popens, self.log_paths, strict=True):
            if popen.poll() is not None:
                raise SystemExit(f"a worker exited:\n{path.read_text()[-3000:]}")

    def settle(self, seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        last = self.cpu()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.cpu()
            if now - last < 0.02:
                return
            last = now


# -- the backend's worker loop in this process ----------------------------------------------


def drain(broker: str) -> None:
    """Run every queued Task with the backend's own worker loop, in this process."""
    if broker == "tasks-db":
        from django_tasks_db.management.commands.db_worker import Worker

        Worker(queue_names=[queue()], interval=0, batch=True, backend_name="default",
               startup_delay=False, max_tasks=None, worker_id="bench-profile",
               excluded_queue_names=[]).run()
        return
    from django_tasks_rq import Job
    from rq import SimpleWorker

    rq = rq_queue()
    SimpleWorker([rq], connection=rq.connection, job_class=Job).work(
        burst=True, logging_level="WARNING")


def profile(broker: str, count: int, start_instances: Callable[[int], object]) -> None:
    """Raw no-op Tasks, then our operations, through the backend's worker loop in this
    process: ms and CPU each, and where ours spend theirs."""
    from django_workflows.models import SweepLease

    logging.getLogger("rq").setLevel(logging.WARNING)
    use(broker)
    # This process runs Tasks now, but measures: no sweeper thread beside it.
    settings.DJANGO_WORKFLOWS["SWEEP_IN_WORKERS"] = False
    workflow_settings.reload()

    def timed(work: Callable[[], object]) -> tuple[float, float]:
        started, cpu = time.perf_counter(), time.process_time()
        work()
        return time.perf_counter() - started, time.process_time() - cpu

    clear(broker)
    enqueue_noops(broker, count)
    raw_wall, raw_cpu = timed(lambda: drain(broker))
    clear(broker)
    start_instances(count)
    drop_sweeps(broker)
    SweepLease.objects.all().delete()
    half = count // 2
    our_wall, our_cpu = timed(lambda: drain_some(broker, half))
    profiler = cProfile.Profile()
    profiler.enable()
    drain(broker)
    profiler.disable()
    ours = count - half
    loop = "db_worker, batch" if broker == "tasks-db" else "RQ's SimpleWorker, burst: no fork"
    print(f"\n{broker}: the backend's worker loop in this process ({loop}): "
          f"raw no-op Task {raw_wall / count * 1000:.2f} ms ({raw_cpu / count * 1000:.2f} ms "
          f"CPU), our operation {our_wall / half * 1000:.2f} ms ({our_cpu / half * 1000:.2f} "
          f"ms CPU): {raw_wall / count / (our_wall / half):.2f} of raw")
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    ours_ct = sum(ct for (file, _line, name), (_cc, _nc, _tt, ct, _callers)
                  in stats.stats.items()  # type: ignore[attr-defined]
                  if name == "run_attempt" and file.endswith("runners/worker.py"))
    print(f"of each operation's {total / ours * 1000:.2f} ms under the profiler: "
          f"{ours_ct / ours * 1000:.2f} ms in runners/worker.py's run_attempt (claim, run, "
          f"finish), {(total - ours_ct) / ours * 1000:.2f} ms in the backend's loop around it")
    stats.sort_stats("tottime").print_stats(15)
    if broker.startswith("tasks-rq"):
        forked(broker, min(count, 200), start_instances)


def in_child(call: Callable[[], object], profile_to: str | None = None) -> None:
    """``call()`` in a process forked for it, as RQ's work horse runs a Task."""
    connections.close_all()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            profiler = cProfile.Profile() if profile_to else None
            if profiler:
                profiler.enable()
            call()
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile_to)
            connections.close_all()
        except BaseException:
            code = 1
        os._exit(code)
    if os.waitpid(pid, 0)[1]:
        raise SystemExit("a forked Task failed")


def forked(broker: str, count: int, start_instances: Callable[[int], object]) -> None:
    """Raw no-op Tasks, then our attempt Tasks, each called in a forked child."""
    from bench.opsapp.noop_task import noop
    from django_workflows.models import Attempt, AttemptStatus
    from django_workflows.runners.tasks.tasks import run_attempt

    def queued_tokens() -> list[str]:
        clear(broker)
        start_instances(count)
        drop_queued(broker)  # called here, not by a worker
        drop_sweeps(broker)
        return list(Attempt.objects.filter(status=AttemptStatus.QUEUED)
                    .values_list("token", flat=True))

    figures = {}
    for name, calls in (("raw", [noop.call] * count),
                        ("ours", [lambda t=t: run_attempt.call(t)
                                  for t in queued_tokens()])):
        started, before = time.perf_counter(), os.times()
        for call in calls:
            in_child(call)
        after = os.times()
        figures[name] = ((time.perf_counter() - started) / len(calls) * 1000,
                         (after.children_user + after.children_system - before.children_user
                          - before.children_system) / len(calls) * 1000)
    (raw_ms, raw_cpu), (our_ms, our_cpu) = figures["raw"], figures["ours"]
    print(f"\n{broker}: each Task in a forked process, as RQ's default worker runs it: raw "
          f"no-op Task {raw_ms:.1f} ms ({raw_cpu:.1f} ms of the child's CPU), our attempt "
          f"{our_ms:.1f} ms ({our_cpu:.1f} ms CPU)")
    with tempfile.TemporaryDirectory() as folder:
        tokens = queued_tokens()
        paths = [f"{folder}/{n}.prof" for n in range(len(tokens))]
        for token, path in zip(tokens, paths, strict=True):
            in_child(lambda token=token: run_attempt.call(token), path)
        stats = pstats.Stats(*paths, stream=sys.stdout)
    stats.files = []  # type: ignore[attr-defined]  # not a line per child's file
    print(f"our attempt in {len(paths)} forked children, under cProfile:")
    stats.sort_stats("cumulative").print_stats(r"django_workflows|connect|psycopg/cursor", 25)


def drain_some(broker: str, count: int) -> None:
    if broker == "tasks-db":
        from django_tasks_db.management.commands.db_worker import Worker

        Worker(queue_names=[queue()], interval=0, batch=True, backend_name="default",
               startup_delay=False, max_tasks=count, worker_id="bench-profile",
               excluded_queue_names=[]).run()
        return
    from django_tasks_rq import Job
    from rq import SimpleWorker

    rq = rq_queue()
    SimpleWorker([rq], connection=rq.connection, job_class=Job).work(
        burst=True, logging_level="WARNING", max_jobs=count)


def drop_sweeps(broker: str) -> None:
    """The sweep's chain started by the runner: not what is measured here."""
    from django_workflows.runners.tasks.sweep_chain import chain_run

    if broker == "tasks-db":
        from django_tasks_db.models import DBTaskResult

        DBTaskResult.objects.filter(task_path=chain_run.module_path).delete()
        return
    rq = rq_queue()
    for job in rq.jobs:
        if job.func_name.endswith(f".{chain_run.name}"):
            rq.remove(job.id)
