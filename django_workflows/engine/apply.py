"""The engine's entry points: new instances, loading (with migration), commands."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .commands import (
    AttemptFinished,
    AttemptInterrupted,
    AttemptStarted,
    Back,
    Cancel,
    Command,
    DeadlineDue,
    Next,
    Retry,
    Rollback,
    Skip,
    Start,
    UpdateState,
    Validate,
)
from .definition import Workflow
from .errors import InvalidState, MigrationRequired, WorkflowError
from .machine import Env, HookFailed, Refused
from .navigation import NavigationMixin, check_state
from .outcome import Event, Outcome
from .results import WorkResultsMixin
from .rollback import RollbackMixin
from .snapshot import WorkflowSnapshot, from_json, new_snapshot


class Machine(NavigationMixin, WorkResultsMixin, RollbackMixin):
    """One instance (and its nested children) changed by one command."""


def new_instance(definition: Workflow, env: Env, state: Mapping[str, Any] | None = None
                 ) -> WorkflowSnapshot:
    """A new ``idle`` instance with the initial state, or the given (validated) one."""
    value = definition.initial_state() if state is None else state
    try:
        checked = check_state(definition.state_schema, value)
    except Refused as refusal:
        raise InvalidState(refusal.message, refusal.field_errors) from None
    return new_snapshot(env.new_id(), definition.id, definition.version, checked)


def load(definition: Workflow, data: Mapping[str, Any], *, nested: bool = False
         ) -> WorkflowSnapshot:
    """A persisted instance as a snapshot, migrated first when saved under another version."""
    version = data.get("version")
    if version != definition.version:
        what = "Nested workflow" if nested else "Workflow"
        if isinstance(version, int) and version > definition.version:
            # Saved by newer code: an older process must not save it back as older.
            raise MigrationRequired(
                f'{what} "{definition.id}" was saved under version {version}, newer than '
                f"this process's version {definition.version}")
        message = f'{what} "{definition.id}" requires a migration from version {version}'
        if definition.migrate is None:
            raise MigrationRequired(message)
        migrated = definition.migrate(copy.deepcopy(dict(data)))
        if migrated is None:
            raise MigrationRequired(message)
        data = {**migrated, "version": definition.version}
    return from_json(data)


_RUN: dict[type[Command], Callable[[Machine, Any], None]] = {
    Start: lambda m, c: m.start(),
    Next: lambda m, c: m.next(),
    Back: lambda m, c: m.back(),
    Skip: lambda m, c: m.skip(),
    Validate: lambda m, c: m.validate(),
    Retry: lambda m, c: m.retry(),
    Cancel: lambda m, c: m.cancel(),
    Rollback: lambda m, c: m.rollback(),
    UpdateState: lambda m, c: m.update_state(c.value),
    AttemptStarted: lambda m, c: m.attempt_started(c.token),
    AttemptFinished: lambda m, c: m.attempt_finished(c.token, c.outcome),
    AttemptInterrupted: lambda m, c: m.attempt_interrupted(c.token),
    DeadlineDue: lambda m, c: m.deadline_due(c.kind, c.token),
}


def apply(definition: Workflow, snapshot: WorkflowSnapshot, command: Command, env: Env, *,
          target: str | None = None) -> Outcome:
    """Apply ``command`` to the instance ``target`` of the tree rooted at ``snapshot``.

    ``target`` is the root by default, or one of its nested children; the
    ancestors of a changed child then follow it (an auto step moves on once
    its child completed, a failed child fails its parent step).
    """
    machines = [Machine(definition, snapshot, env)]
    while target is not None and machines[-1].snap.id != target:
        if machines[-1].snap.nested is None:
            raise WorkflowError(f"Instance {target} is not part of instance {snapshot.id}")
        machines.append(machines[-1].child_machine())
    machine = machines[-1]
    refusal: Refused | None = None
    error: str | None = None
    try:
        _RUN[type(command)](machine, command)
    except Refused as refused:
        refusal = refused
    except HookFailed as failed:
        error = failed.message
    for parent, child in zip(reversed(machines[:-1]), reversed(machines[1:]), strict=True):
        changed = child.snap is not parent.snap.nested
        parent.set(nested=child.snap)
        if changed:
            try:
                parent.child_changed()
            except HookFailed as failed:
                error = error or failed.message
    return Outcome(snapshot=machines[0].snap, events=tuple(machine.events),
                   effects=tuple(machine.effects), moved=refusal is None,
                   code=refusal.code if refusal else None,
                   message=refusal.message if refusal else None, error=error,
                   field_errors=refusal.field_errors if refusal else ())


def definitions_of(definition: Workflow, snapshot: WorkflowSnapshot,
                   resolve: Callable[[str], Workflow] | None = None) -> dict[str, Workflow]:
    """The definition of each instance of a tree, by instance id."""
    found = {snapshot.id: definition}
    machine = Machine(definition, snapshot, Env(now=0.0, resolve=resolve))
    while machine.snap.nested is not None:
        machine = machine.child_machine()
        found[machine.snap.id] = machine.definition
    return found


def deliver(definition: Workflow, events: Iterable[Event],
            receivers: Iterable[Callable[[Event], Any]] = ()) -> list[BaseException]:
    """Give each event to ``analytics`` then each receiver; their errors change nothing.

    An error goes to ``on_observer_error`` (whose own errors are swallowed);
    the errors are returned so the caller can log them.
    """
    sinks = [definition.analytics] if definition.analytics else []
    sinks.extend(receivers)
    errors: list[BaseException] = []
    for event in events:
        for sink in sinks:
            try:
                sink(event)
            except Exception as problem:
                errors.append(problem)
                if definition.on_observer_error is not None:
                    try:
                        definition.on_observer_error(problem)
                    except Exception as nested_problem:
                        errors.append(nested_problem)
    return errors
