"""The attempt's Task, which the backend's workers run (the sweep's is in ``sweep.py``). It
takes a token, never objects, and never fails: the backend has nothing to retry.

It is made for the backend and the queue the settings name when this module is imported
(``TASKS_BACKEND``, ``TASKS_QUEUE``; ``compat.task_of``); the runner enqueues it with the
settings of the moment (``Task.using``).
"""

from __future__ import annotations

import logging

from ...conf import workflow_settings
from .. import worker
from .compat import task_of
from .sweep_chain import keep_sweeping, sweeper_beside

logger = logging.getLogger("django_workflows")


@task_of(workflow_settings.TASKS_BACKEND, workflow_settings.TASKS_QUEUE)
def run_attempt(token: str) -> None:
    """Run one attempt (an operation attempt, a branch or a compensation).

    Whatever goes wrong is logged, not raised: our tables say what became of the attempt
    (still queued: handed out again by the sweep; claimed: interrupted when its heartbeat
    stops), and a backend that retries failed Tasks must not run it behind their back.
    """
    try:
        sweeper_beside()
        worker.run_attempt(token, heartbeat_thread=True)
        keep_sweeping()
    except Exception:
        logger.exception("Attempt %s failed in its worker; the sweep will see to it", token)
