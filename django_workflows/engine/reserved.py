"""State keys a definition keeps for what writes them (``docs/tasks.md``).

A step's task writes its input under ``task.key`` (default: the step's id), and only
the task does: ``create`` and ``update_state`` refuse another value there, so a guard
or a later step that reads a decision reads what a candidate decided, never what the
owner wrote. Each definition judges its own keys (a nested child's are its own). A new
step's signal writes its payload under ``into`` (default: the signal's name), and only the
signal does, for the same reason: a step that waits for a payment reads what the provider
sent, never what the owner typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .definition import Workflow
from .errors import Refused
from .messages import key_reserved
from .schema import FieldError
from .waits import Signal

ABSENT = object()  # a key the state does not have


def reserved_keys(definition: Workflow) -> dict[str, str]:
    """Each state key that only something of ``definition`` writes, with what writes it
    (``{"approval": 'the task of step "approval"'}``): a task's input, a signal's payload.

    A task writes under ``task.key or step.id``; one with its own ``merge`` writes where it
    likes, so only a ``key`` it names explicitly is reserved for it.
    """
    keys: dict[str, str] = {}
    for step in definition.steps:
        task = step.task
        if task is not None:
            key = task.key if task.merge is not None else task.key or step.id
            if key is not None:
                keys.setdefault(key, f'the task of step "{step.id}"')
        if isinstance(step.wait, Signal):
            keys.setdefault(step.wait.key, f'the signal "{step.wait.name}" of step "{step.id}"')
    return keys


def refuse_written_keys(definition: Workflow, state: Mapping[str, Any],
                        kept: Mapping[str, Any]) -> None:
    """Refuse (``invalid_state``, a field error per key) a ``state`` whose reserved keys are
    not as in ``kept``: the same value, or absent where ``kept`` has no such key."""
    problems = [FieldError(key, key_reserved(key, writer))
                for key, writer in reserved_keys(definition).items()
                if state.get(key, ABSENT) != kept.get(key, ABSENT)]
    if problems:
        raise Refused("invalid_state", "; ".join(p.message for p in problems), problems)
