"""Runs background work on Django's Tasks framework: ``django.tasks`` on Django 6.0+, the
``django-tasks`` backport on 5.2 (``compat.py``), with any backend whose worker runs in
another process and that can defer a Task (``run_after``): the database backend
(``manage.py db_worker``), RQ (``manage.py rqworker --with-scheduler``), others.

The runner enqueues one Task per attempt, carrying only its token (``tasks.run_attempt``),
on the backend and queue ``TASKS_BACKEND`` and ``TASKS_QUEUE`` name. The backend is a dumb
executor, as django-q2 is: the claim, the fencing, the heartbeats, the retries and the
timeouts are our tables' (``runners/worker.py``, the sweep), never the backend's retries or
results. The sweep reaches the workers as Tasks too (``sweep.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ...conf import workflow_settings
from .compat import Task
from .sweep_chain import keep_sweeping, task_for
from .tasks import run_attempt

logger = logging.getLogger("django_workflows")


def attempt_task() -> Task[..., Any]:
    """The attempt Task on the backend and queue the settings name now."""
    return task_for(run_attempt, workflow_settings.TASKS_BACKEND, workflow_settings.TASKS_QUEUE,
                  run_attempt.priority)


class Runner:
    def enqueue(self, tokens: Sequence[str]) -> None:
        task = attempt_task()
        for token in tokens:
            task.enqueue(token)
        keep_sweeping()


def keep_sweeping_now(sender: Any = None, **kwargs: Any) -> None:
    """``post_migrate`` and ``request_started`` receiver: a deploy, and a site that serves
    requests, start the sweep's chain again if none is alive (a look every ``LOOK_EVERY``
    seconds at most), so a site whose work only waits (timers, schedules) sweeps too, and a
    backend that lost the chain (a Redis restarted empty) gets another."""
    if workflow_settings.RUNNER is not Runner:
        return
    try:
        keep_sweeping()
    except Exception:  # a backend not reachable now: the next look tries again
        logger.exception("Could not start the sweep's chain of Tasks")
