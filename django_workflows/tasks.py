"""Entry points for django-q2 workers. They take tokens, never objects."""

from __future__ import annotations

from . import worker
from .services import sweep


def run_attempt(token: str, instance_id: str | None = None) -> bool:
    """Run one attempt (an operation attempt, a branch or a compensation)."""
    return worker.run_attempt(token, heartbeat_thread=True, instance_id=instance_id)


def sweep_loop(duration: float | None = None) -> str:
    """One sweep, for a schedule installed by an earlier version's ``workflows_schedule``.

    The workers sweep by themselves now (``django_workflows.sweeper``); this no
    longer loops, so such a schedule holds no worker.
    """
    return str(sweep())
