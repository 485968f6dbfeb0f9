"""Runs background work on django-q2 workers (``manage.py qcluster``): the runner that
enqueues, the functions the workers run (``tasks.py``), a sweeper thread in each
worker, and a broker woken by PostgreSQL's ``NOTIFY`` (``listen_broker.py``).

Only attempt tokens go to the broker. django-q2 is a dumb executor: our own
tables say what runs and what happened, so a lost, repeated or late task
changes nothing (the claim is refused) and a lost one is handed out again by
the sweep. For the same reason django-q2 keeps no success row of its own for
an attempt (``save=False``): the attempt's row is the record, and writing a
second one cost the cluster's monitor more than the operation cost its
worker. A task that failed (our code raising) is still saved, as django-q2
saves every failure.
"""

from __future__ import annotations

import multiprocessing.util
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from ...conf import workflow_settings
from ...models import Attempt
from ..sweeper_thread import Sweeper

TASK = "django_workflows.runners.django_q.tasks.run_attempt"


def task_timeout(attempt_timeout: float | None) -> int | None:
    """Kill a task that outlived its attempt by more than a heartbeat timeout."""
    if attempt_timeout:
        return int(attempt_timeout + workflow_settings.HEARTBEAT_TIMEOUT) + 1
    cluster_timeout = (getattr(settings, "Q_CLUSTER", {}) or {}).get("timeout")
    return int(cluster_timeout) if cluster_timeout else None


class Runner:
    def enqueue(self, tokens: Sequence[str]) -> None:
        from django_q.brokers import get_broker
        from django_q.tasks import async_task

        timeouts = dict(Attempt.objects.filter(token__in=tokens).values_list(
            "token", "timeout"))
        broker = get_broker()  # one connection for them all
        for token in tokens:
            if token not in timeouts:
                continue  # its instance was deleted meanwhile
            async_task(TASK, token, task_name=f"workflow attempt {token}",
                       timeout=task_timeout(timeouts[token]), save=False, broker=broker)


def start_sweeper(sender: Any = None, **kwargs: Any) -> Sweeper | None:
    """django-q2's ``post_spawn`` receiver: a sweeper thread in this new worker process."""
    if not workflow_settings.SWEEP_IN_WORKERS:
        return None
    sweeper = Sweeper()
    sweeper.start()
    # A worker that exits cleanly (recycled, or the cluster stopping) hands the lease on
    # at once; multiprocessing runs these finalizers in its children, atexit does not.
    multiprocessing.util.Finalize(None, sweeper.stop, exitpriority=10)
    return sweeper
