"""Messages the engine writes into snapshots and events, each in one place.

Their texts follow the original runner's (``SEED-RULES.md``), in seconds.
"""

from __future__ import annotations

CANCELLED = "Cancelled"
INTERRUPTED_OPERATION = "Operation was interrupted before workflow recovery"
INTERRUPTED_BRANCH = "Parallel branch was interrupted before workflow recovery"
INTERRUPTED_COMPENSATION = "Compensation was interrupted before workflow recovery"
INTERRUPTED_WORKFLOW = "Workflow work was interrupted and must be retried"
ROLLED_BACK_WITH_PARENT = "Rolled back with its parent"


def format_seconds(value: float) -> str:
    """``60.0`` -> ``60s``, ``1.5`` -> ``1.5s``, as the timeout messages print them."""
    return f"{value:g}s"


def operation_timed_out(timeout: float | None) -> str:
    """The error of an operation attempt that outlived its ``timeout``."""
    return f"Operation timed out after {format_seconds(timeout or 0)}"


def step_timed_out(step: str, timeout: float | None) -> str:
    return f'Workflow step "{step}" timed out after {format_seconds(timeout or 0)}'


def step_left(step: str | None) -> str:
    return f'Workflow step "{step}" was left'


def step_skipped(step: str | None) -> str:
    return f'Workflow step "{step}" was skipped'
