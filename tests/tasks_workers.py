"""Real Tasks workers for tests, as tests/qcluster.py starts qcluster: `manage.py db_worker`
processes of the database backend and `manage.py rqworker` processes of RQ (the tasks extra).

They run the Tasks runner against the test database (committed data: use
``django_db(transaction=True)``), on PostgreSQL, MariaDB or SQLite, each worker in a process
group of its own. With nothing else running, they sweep too (the chain of sweep Tasks and
the sweeper threads of ``django_workflows/runners/tasks/sweep_chain.py``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from django.db import connection

from django_workflows.conf import TASKS_RUNNER
from tests.qcluster import Process, wait_for
from tests.qcluster import database_url as server_url

# The runner's name in the tests (the background tests' "broker") -> the TASKS alias.
# tasks-rq: RQ with our worker class (workflow Tasks in the worker's process: the docs'
# way); tasks-rq-fork: RQ's default worker, which forks a work horse for every Task.
BACKENDS = {"tasks-db": "default", "tasks-rq": "rq", "tasks-rq-fork": "rq"}
RQ_WORKER = "django_workflows.runners.tasks.rq_worker.Worker"
RQ_DB = int(os.environ.get("DWF_RQ_DB", "9"))


def queue_name() -> str:
    """This test run's queue (tests/settings.py: one per run, inherited by the children)."""
    return os.environ["DWF_TASKS_QUEUE"]


def database_url() -> str:
    """The test database for the children: its file on SQLite, its server otherwise."""
    if connection.vendor == "sqlite":
        return f"sqlite:///{connection.settings_dict['NAME']}"
    return server_url()


def child_env(runner: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "DATABASE_URL": database_url(), "DWF_RUNNER": TASKS_RUNNER,
           "DWF_TASKS_BACKEND": BACKENDS[runner],
           "DWF_HEARTBEAT_INTERVAL": "0.5", "DWF_HEARTBEAT_TIMEOUT": "3",
           "DWF_SWEEP_INTERVAL": "0.2", "PYTHONUNBUFFERED": "1"}
    env.pop("DWF_TEST_RUN_ID", None)  # the child's NAME is already the test database
    env.update(extra)
    return env


def rq_connection() -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=6379, db=RQ_DB)


def clear_rq_queue() -> None:
    """Forget this run's RQ queue and its registries (other runs may share the database):
    what the last test left queued or deferred, the sweep's chain among it."""
    from rq import Queue
    from rq.registry import (
        FailedJobRegistry,
        FinishedJobRegistry,
        ScheduledJobRegistry,
        StartedJobRegistry,
    )

    client = rq_connection()
    queue = Queue(queue_name(), connection=client)
    ids = set(queue.get_job_ids())
    for registry in (ScheduledJobRegistry, StartedJobRegistry, FinishedJobRegistry,
                     FailedJobRegistry):
        ids.update(registry(queue=queue).get_job_ids())
    keys = [key for id in ids for key in (f"rq:job:{id}", f"rq:results:{id}")]
    keys += client.scan_iter(f"rq:*{queue_name()}*")
    if keys:
        client.delete(*keys)


def forget_rq_scheduler_lock() -> None:
    from rq.scheduler import RQScheduler

    rq_connection().delete(RQScheduler.get_locking_key(queue_name()))


class Workers:
    """A few worker processes, watched as one (the shape of tests/qcluster.Process)."""

    def __init__(self, runner: str, members: list[Process]) -> None:
        self.runner = runner
        self.members = members

    def alive(self) -> bool:
        return all(member.popen.poll() is None for member in self.members)

    def log(self) -> str:
        return "\n".join(member.log() for member in self.members)

    def pids(self) -> list[int]:
        return [member.popen.pid for member in self.members]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill every process that runs Tasks: the db_worker processes and those of our RQ
        worker class; under RQ's default worker, the work horses, not its main process (it
        holds RQ's scheduler lock, which a kill -9 would keep from every other worker for a
        minute, and the chain of sweep Tasks needs the scheduler: docs/background.md)."""
        if self.runner == "tasks-rq-fork":
            for pid in work_horses(self.pids()):
                with suppress(ProcessLookupError):
                    os.kill(pid, sig)
            return
        for member in self.members:
            member.kill(sig)

    def kill_worker_of(self, attempt: Any) -> None:
        """Kill -9 the one process that runs ``attempt`` (a running Attempt row): its
        db_worker or RQ worker (the others go on), or RQ's work horse."""
        if self.runner == "tasks-rq-fork":
            # Not the horse of a sweep Task running at that moment: the chain would die
            # with it (sweep.py says so), and nothing would sweep the dead attempt.
            horses = work_horses(self.pids(), running="runners.tasks.tasks.run_attempt")
            assert horses, "no RQ work horse runs an attempt"
            for horse in horses:
                with suppress(ProcessLookupError):
                    os.kill(horse, signal.SIGKILL)
            return
        pid = int(attempt.worker.rsplit(":", 1)[1])
        (member,) = [member for member in self.members if member.popen.pid == pid]
        member.kill()

    def stop(self) -> None:
        for member in self.members:
            member.stop()


def work_horses(parents: list[int], running: str = "") -> list[int]:
    """The processes RQ forked to run a Task (``rq: Processing <module path> ...``) under
    ``parents``; with ``running``, only those whose Task's path contains it."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().decode(errors="replace")
            if ppid in parents and "Processing" in cmdline and running in cmdline:
                found.append(int(stat.parent.name))
    return found


def worker_args(runner: str) -> tuple[list[str], str]:
    """The command of one worker, and what it logs once it takes Tasks."""
    if runner == "tasks-db":
        return (["db_worker", "--queue-name", queue_name(), "--interval", "0.05",
                 "--no-startup-delay", "--no-reload"], "Starting worker")
    own_class = ["--worker-class", RQ_WORKER] if runner == "tasks-rq" else []
    return (["rqworker", "--with-scheduler", "--job-class", "django_tasks_rq.Job", *own_class,
             queue_name()], "Listening on")


@contextmanager
def tasks_background(runner: str = "tasks-db", *, workers: int = 2, sweeper: bool = True,
                     **env: str) -> Iterator[Workers]:
    """``workers`` running workers of ``runner`` (``tasks-db`` or ``tasks-rq``) until the
    block ends; they sweep by themselves unless ``sweeper`` is false (no thread, and the
    chain only if this process starts one)."""
    args, started = worker_args(runner)
    members = [Process(f"{runner}-{n + 1}", args, child_env(
        runner, DWF_SWEEP_IN_WORKERS="1" if sweeper else "0", **env)) for n in range(workers)]
    running = Workers(runner, members)
    try:
        wait_for(lambda: all(started in m.log() or m.popen.poll() is not None for m in members),
                 timeout=30, message=f"the {runner} workers to start")
        if not running.alive():
            raise AssertionError(f"a {runner} worker exited:\n{running.log()}")
        yield running
    finally:
        running.stop()
