r"""RQ's worker for a site that runs its workflows on RQ: workflow Tasks in the worker's own
process, every other Task in a work horse forked for it, as RQ's default worker does.

    python manage.py rqworker --with-scheduler \
        --worker-class django_workflows.runners.tasks.rq_worker.Worker

RQ's default worker forks a process for every Task, which starts with no database
connection: each operation would pay for a new PostgreSQL connection and a server backend
with cold caches, several times the cost of the operation itself (docs/background.md).
Here an attempt or a sweep runs in the worker's process, as on ``db_worker`` and django-q2's
workers, and keeps its connection between Tasks (with ``CONN_MAX_AGE``) and its prepared
statements; the worker sweeps in a thread from its start (``sweep.sweeper_beside``).

What the fork gave an attempt is ours anyway: a worker that dies (kill -9, out of memory)
is found by its silent heartbeat and its attempt interrupted and retried as on any runner;
RQ's job timeout still applies (its alarm, as in ``SimpleWorker``).
"""

from __future__ import annotations

import signal
from typing import Any

from django.db import close_old_connections, connections
from rq.worker import SimpleWorker
from rq.worker import Worker as ForkingWorker

from .sweep_chain import chain_run, sweeper_beside
from .tasks import run_attempt

# The Tasks that run in the worker's process: RQ's job names them by their module path.
IN_PROCESS = frozenset({run_attempt.module_path, chain_run.module_path})


class Worker(ForkingWorker, SimpleWorker):
    """RQ's default worker, with our Tasks run in its own process, as its SimpleWorker runs
    every Task: each Task is run by one of the two, and its heartbeat is theirs."""

    def work(self, *args: Any, **kwargs: Any) -> bool:
        # The sweep starts with the worker, before any Task: a worker started after a crash
        # with nothing queued still finds the dead attempts (RQ's scheduler, which the chain
        # of sweep Tasks needs, can stay locked by a killed worker for a minute).
        sweeper_beside()
        return bool(super().work(*args, **kwargs))

    def execute_job(self, job: Any, queue: Any) -> None:
        if job.func_name not in IN_PROCESS:
            # A work horse must not share this process's connections: the two would talk
            # over one socket. The horse opens its own, as under RQ's default worker.
            connections.close_all()
            super().execute_job(job, queue)
            return
        close_old_connections()  # CONN_MAX_AGE and CONN_HEALTH_CHECKS, as db_worker does
        try:
            SimpleWorker.execute_job(self, job, queue)
        finally:
            close_old_connections()

    def kill_horse(self, sig: signal.Signals = signal.SIGKILL) -> None:
        # RQ's "stop job" and cold shutdown kill the horse's process group; with no horse
        # that would be this worker's own group. A workflow's Task is stopped by cancelling
        # its instance; a cold shutdown ends this process (SystemExit) and the attempt is
        # recovered from its heartbeat.
        if self.horse_pid:
            super().kill_horse(sig)

    def get_heartbeat_ttl(self, job: Any, working_time: float = 0.0) -> int:
        # No work horse to monitor: the worker's key must outlive the Task itself.
        if job.func_name in IN_PROCESS:
            return SimpleWorker.get_heartbeat_ttl(self, job, working_time)
        return ForkingWorker.get_heartbeat_ttl(self, job, working_time)
