"""Messages the engine writes into snapshots and events, each in one place.

Their texts are the ones ``docs/rules.md`` quotes (times in seconds): tests and
users' code match on them, so change them only with the docs.
"""

from __future__ import annotations

import json

from .errors import MissingStateKey

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


def signal_timed_out(step: str, signal: str, timeout: float | None) -> str:
    return (f'Workflow step "{step}" waited for the signal "{signal}" longer than '
            f"{format_seconds(timeout or 0)}")


def step_left(step: str | None) -> str:
    return f'Workflow step "{step}" was left'


def step_skipped(step: str | None) -> str:
    return f'Workflow step "{step}" was skipped'


def key_reserved(key: str, writer: str) -> str:
    """Why ``create`` or ``update_state`` refuses a value under a state key that only
    ``writer`` writes (``the task of step "approval"``)."""
    return f"{json.dumps(key, ensure_ascii=False)} is written by {writer}; it cannot be set here"


def step_hook(kind: str, step: str | None) -> str:
    """Which hook raised, as :func:`missing_key` names it: ``The enter hook of step "x"``."""
    return f'The {kind} hook of step "{step}"'


def transition_guard(source: str, target: str) -> str:
    return f'The guard of the transition from "{source}" to "{target}"'


def missing_key(hook: str, error: BaseException) -> str | None:
    """What a ``KeyError`` of ``hook`` means, said so a person can act on it; else None.

    Its own text is only the key (``'email'``), which names neither the hook nor the state.
    """
    if isinstance(error, MissingStateKey):
        key = json.dumps(error.key, ensure_ascii=False) if isinstance(error.key, str) \
            else repr(error.key)
        return f"{hook} read state[{key}], which the state does not have"
    if isinstance(error, KeyError):
        return f"{hook} raised KeyError {error}"
    return None
