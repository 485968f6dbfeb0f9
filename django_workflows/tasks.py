"""Entry points for django-q2 workers. They take tokens, never objects."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import close_old_connections

from . import worker
from .conf import workflow_settings
from .services import sweep


def run_attempt(token: str, instance_id: str | None = None) -> bool:
    """Run one attempt (an operation attempt, a branch or a compensation)."""
    return worker.run_attempt(token, heartbeat_thread=True, instance_id=instance_id)


def sweep_loop(duration: float | None = None) -> str:
    """Sweep every ``SWEEP_INTERVAL`` seconds for about a minute (the schedule's period).

    django-q2 schedules run at most once a minute; looping inside the task
    fires deadlines within seconds. It stops before the cluster's task
    timeout would kill it.
    """
    interval = float(workflow_settings.SWEEP_INTERVAL)
    cluster_timeout = (getattr(settings, "Q_CLUSTER", {}) or {}).get("timeout") or 60
    if duration is None:
        duration = max(min(60.0, cluster_timeout) - interval - 1, 0)
    end = time.monotonic() + duration
    reports = []
    while True:
        close_old_connections()
        reports.append(sweep())
        if time.monotonic() + interval > end:
            break
        time.sleep(interval)
    return "; ".join(str(r) for r in reports if r.fired or r.interrupted or r.redispatched) \
        or f"{len(reports)} sweeps, nothing due"
