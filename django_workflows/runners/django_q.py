"""Runs background work on django-q2 workers (``manage.py qcluster``).

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

from collections.abc import Sequence

from django.conf import settings

from ..conf import workflow_settings
from ..models import Attempt

TASK = "django_workflows.tasks.run_attempt"


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

        rows = {token: (instance_id, timeout) for token, instance_id, timeout in
                Attempt.objects.filter(token__in=tokens).values_list(
                    "token", "instance_id", "timeout")}
        broker = get_broker()  # one connection for them all
        for token in tokens:
            if token not in rows:
                continue  # its instance was deleted meanwhile
            instance_id, timeout = rows[token]
            # The instance's id saves the worker looking it up before it claims.
            async_task(TASK, token, str(instance_id), task_name=f"workflow attempt {token}",
                       timeout=task_timeout(timeout), save=False, broker=broker)
