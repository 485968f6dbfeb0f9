"""Small factories for the navigation tests: definitions, started instances, hook recorders."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

from django_workflows.engine import Event, Operation, Step, Transition, Workflow
from django_workflows.testing.local import LocalExecutor


def chain(*steps: Step, id: str = "w", **workflow: Any) -> Workflow:
    """A workflow whose steps follow one another in the order given."""
    transitions = [Transition(a.id, b.id) for a, b in pairwise(steps)]
    return Workflow(id, steps=steps, transitions=transitions, **workflow)


def wizard(*step_ids: str, id: str = "w", **workflow: Any) -> Workflow:
    """A chain of plain manual steps, as a wizard has."""
    return chain(*(Step(step_id) for step_id in step_ids), id=id, **workflow)


def created(definition: Workflow, state: Mapping[str, Any] | None = None,
            **executor: Any) -> tuple[LocalExecutor, str]:
    """An executor holding one new (idle) instance of ``definition``."""
    x = LocalExecutor(definition, **executor)
    return x, x.create(definition.id, state)


def started(definition: Workflow, state: Mapping[str, Any] | None = None,
            **executor: Any) -> tuple[LocalExecutor, str]:
    """An executor holding one started instance of ``definition``."""
    x, instance = created(definition, state, **executor)
    x.start(instance)
    return x, instance


def kinds(events: Any) -> list[str]:
    """The types of some events, in order."""
    return [event.type for event in events]


def trail(events: Any) -> list[tuple[str, str | None]]:
    """(type, step) of some events, in order."""
    return [(event.type, event.step) for event in events]


def succeeds(result: Any = "done") -> Operation:
    return Operation("op", run=lambda ctx: result)


class Calls:
    """Hooks that record that they were called, in one shared list."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def hook(self, name: str, result: Any = None) -> Callable[..., Any]:
        def hook(*args: Any) -> Any:
            self.log.append(name)
            return result

        return hook

    def count(self, name: str) -> int:
        return self.log.count(name)


def raises(message: str, error: type[Exception] = RuntimeError) -> Callable[..., Any]:
    """A hook that raises ``error(message)``."""

    def hook(*args: Any) -> Any:
        raise error(message)

    return hook


def of_instance(events: list[Event], instance: str) -> list[Event]:
    return [event for event in events if event.instance_id == instance]
