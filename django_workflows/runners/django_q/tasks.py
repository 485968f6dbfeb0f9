"""The functions django-q2's workers run. They take tokens, never objects."""

from __future__ import annotations

from ...services import sweep
from .. import worker


def run_attempt(token: str, instance_id: str | None = None) -> bool:
    """Run one attempt (an operation attempt, a branch or a compensation).

    ``instance_id``: what the runner sent before the claim read it from the attempt's row;
    tasks queued then may still carry it.
    """
    return worker.run_attempt(token, heartbeat_thread=True)


def sweep_loop(duration: float | None = None) -> str:
    """One sweep, for a schedule installed by an earlier version's ``workflows_schedule``.

    The workers sweep by themselves now (``runners/sweeper_thread.py``); this no
    longer loops, so such a schedule holds no worker.
    """
    return str(sweep())
