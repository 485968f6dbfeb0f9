"""Shared helpers for the engine tests of background work.

Operations, branches, compensations and workflows built for a test, and small
readers of what a :class:`LocalExecutor` did (event types, statuses).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from django_workflows.engine import Operation, Step, Transition, Workflow
from django_workflows.testing.local import LocalExecutor


class Calls(list):
    """A list of what ran, in order; its methods make hooks that append to it."""

    def hook(self, name: str, result: Any = None) -> Callable[..., Any]:
        """A hook (any arguments) that records ``name`` and returns ``result``."""
        def hook(*args: Any) -> Any:
            self.append(name)
            return result
        return hook

    def run(self, name: str, result: Any = None) -> Callable[[Any], Any]:
        """An operation ``run`` that records ``name`` and returns ``result``."""
        return self.hook(name, result)

    def rollback(self, name: str) -> Callable[[Any, Any], None]:
        """An operation ``rollback`` that records ``(name, last result)``."""
        def rollback(result: Any, ctx: Any) -> None:
            self.append((name, result))
        return rollback

    def failing(self, name: str, message: str = "boom") -> Callable[..., Any]:
        """A hook that records ``name`` and raises ``RuntimeError(message)``."""
        def hook(*args: Any) -> Any:
            self.append(name)
            raise RuntimeError(message)
        return hook


def fails_first(times: int, result: Any = "done", calls: list | None = None,
                message: str = "attempt {attempt} failed") -> Callable[[Any], Any]:
    """A ``run`` that raises on its first ``times`` attempts, then returns ``result``."""
    def run(ctx: Any) -> Any:
        if calls is not None:
            calls.append(ctx.attempt)
        if ctx.attempt <= times:
            raise RuntimeError(message.format(attempt=ctx.attempt))
        return result
    return run


def fails_calls(times: int, result: Any = "done", calls: list | None = None,
                message: str = "call {call} failed") -> Callable[[Any], Any]:
    """A ``run`` whose first ``times`` calls raise, whatever their attempt number."""
    made: list[int] = []

    def run(ctx: Any) -> Any:
        made.append(ctx.attempt)
        if calls is not None:
            calls.append(ctx.attempt)
        if len(made) <= times:
            raise RuntimeError(message.format(call=len(made)))
        return result
    return run


def chain(*steps: Step, workflow_id: str = "wf", **options: Any) -> Workflow:
    """A workflow whose steps follow each other in the order given."""
    transitions = [Transition(a.id, b.id) for a, b in itertools.pairwise(steps)]
    return Workflow(workflow_id, steps=list(steps), transitions=transitions, **options)


def one_operation(operation: Operation, *, advance: str = "manual", timeout: Any = None,
                  workflow_id: str = "wf") -> Workflow:
    """A workflow of one step ``work`` running ``operation``."""
    return Workflow(workflow_id, steps=[Step("work", operations=[operation], advance=advance,
                                             timeout=timeout)])


def started(definition: Workflow, *others: Workflow, autorun: bool = True,
            state: dict[str, Any] | None = None) -> tuple[LocalExecutor, str]:
    """An executor holding ``definition`` (and ``others``) and a started instance of it."""
    x = LocalExecutor(definition, *others, autorun=autorun)
    instance = x.create(definition.id, state)
    x.start(instance)
    return x, instance


def types(x: LocalExecutor, instance: str, *, prefix: str | None = None) -> list[str]:
    """The types of an instance's events, in order (those starting with ``prefix``)."""
    return [e.type for e in x.events_of(instance) if prefix is None or e.type.startswith(prefix)]


def op(x: LocalExecutor, instance: str, operation_id: str) -> Any:
    """The snapshot of one operation of an instance."""
    found = x.snapshot(instance).operation(operation_id)
    assert found is not None, f"no operation {operation_id!r}"
    return found


def pending_token(x: LocalExecutor, target: str | None = None) -> str:
    """The token of the (only, or the one for ``target``) pending attempt."""
    matching = [p for p in x.pending if target is None or p.target == target]
    assert len(matching) == 1, f"expected one pending attempt, found {matching}"
    return matching[0].token


def branch_statuses(x: LocalExecutor, instance: str) -> dict[str, str]:
    return {b.id: b.status for b in x.snapshot(instance).parallel}


def without(items: Iterable[str], *unwanted: str) -> list[str]:
    return [item for item in items if item not in unwanted]
