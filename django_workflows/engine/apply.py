"""The engine's entry points: new instances, loading (with migration), commands, what applies."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .change import Change, Env
from .commands import COMMANDS, AttemptStarted, Command, PersonCommand
from .context import resolve as resolve_awaitable
from .definition import Workflow
from .errors import Allowed, HookFailed, InvalidState, MigrationRequired, Refused, WorkflowError
from .outcome import Event, Outcome
from .reserved import refuse_written_keys, reserved_keys
from .rules import paused
from .rules.steps import child_changed, settle
from .schema import check_state
from .snapshot import WorkflowSnapshot, from_json, new_snapshot


def new_instance(definition: Workflow, env: Env, state: Mapping[str, Any] | None = None
                 ) -> WorkflowSnapshot:
    """A new ``idle`` instance with the initial state, or the given (validated) one.

    A given state may not set a key a task writes to anything but what the initial state
    has there (``engine/reserved.py``)."""
    value = definition.initial_state() if state is None else state
    try:
        checked = check_state(definition.state_schema, value)
        if state is not None and reserved_keys(definition).keys() & checked.keys():
            initial = check_state(None, definition.initial_state())
            refuse_written_keys(definition, {**initial, **checked}, initial)
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
        # A migration may be a coroutine, as every other hook may.
        migrated = resolve_awaitable(definition.migrate(copy.deepcopy(dict(data))))
        if migrated is None:
            raise MigrationRequired(message)
        data = {**migrated, "version": definition.version}
    return from_json(data)


def _changes_to(definition: Workflow, snapshot: WorkflowSnapshot, env: Env,
                target: str | None, *, dry: bool = False) -> list[Change]:
    """A Change for each instance from the root down to ``target`` (the root by default)."""
    changes = [Change(definition, snapshot, env, dry=dry)]
    while target is not None and changes[-1].snap.id != target:
        if changes[-1].snap.nested is None:
            raise WorkflowError(f"Instance {target} is not part of instance {snapshot.id}")
        changes.append(changes[-1].child())
    return changes


ClaimedAttempt = tuple[str, str, float]  # (instance id, token, when a worker claimed it)


def apply(definition: Workflow, snapshot: WorkflowSnapshot, command: Command, env: Env, *,
          target: str | None = None, claimed: Iterable[ClaimedAttempt] = ()) -> Outcome:
    """Apply ``command`` to the instance ``target`` of the tree rooted at ``snapshot``.

    ``target`` is the root by default, or one of its nested children; the
    ancestors of a changed child then follow it (an auto step moves on once
    its child completed, a failed child fails its parent step).

    ``claimed``: attempts workers claimed since the snapshot was saved; each is
    recorded first (``AttemptStarted``), so that the command sees them running.
    """
    snapshot, earlier = _record_claims(definition, snapshot, env, claimed)
    outcome = _apply(definition, snapshot, command, env, target)
    if not earlier:
        return outcome
    return replace(outcome,
                   events=(*(e for o in earlier for e in o.events), *outcome.events),
                   effects=(*(e for o in earlier for e in o.effects), *outcome.effects),
                   detached=(*(d for o in earlier for d in o.detached), *outcome.detached))


def with_claims(definition: Workflow, snapshot: WorkflowSnapshot, env: Env,
                claimed: Iterable[ClaimedAttempt]) -> WorkflowSnapshot:
    """The snapshot with the ``claimed`` attempts recorded (for a dry run: what applies)."""
    return _record_claims(definition, snapshot, env, claimed)[0]


def _record_claims(definition: Workflow, snapshot: WorkflowSnapshot, env: Env,
                   claimed: Iterable[ClaimedAttempt]) -> tuple[WorkflowSnapshot, list[Outcome]]:
    recorded = []
    for instance_id, token, at in claimed:
        started = _apply(definition, snapshot, AttemptStarted(token, at), env, instance_id)
        if started.moved:  # a stale one is no claim to record
            recorded.append(started)
            snapshot = started.snapshot
    return snapshot, recorded


def _apply(definition: Workflow, snapshot: WorkflowSnapshot, command: Command, env: Env,
           target: str | None) -> Outcome:
    changes = _changes_to(definition, snapshot, env, target)
    change = changes[-1]
    refusal: Refused | None = None
    error: str | None = None
    try:
        if not paused.meets(change, command):  # held while paused: applied on resume
            type(command).rule(change, command)
        settle(change)
    except Refused as refused:
        refusal = refused
    except HookFailed as failed:
        error = failed.message
    for parent, child in zip(reversed(changes[:-1]), reversed(changes[1:]), strict=True):
        changed = child.snap is not parent.snap.nested
        parent.set(nested=child.snap)
        if changed:
            try:
                child_changed(parent)
                settle(parent)
            except HookFailed as failed:
                error = error or failed.message
    collected = change.collected
    return Outcome(snapshot=changes[0].snap, events=tuple(collected.events),
                   effects=tuple(collected.effects), detached=tuple(collected.detached),
                   moved=refusal is None,
                   code=refusal.code if refusal else None,
                   message=refusal.message if refusal else None, error=error,
                   field_errors=refusal.field_errors if refusal else ())


@dataclass(frozen=True)
class Verdict:
    """Whether a command would be accepted now, and if not, the refusal's code and message;
    ``confirm``, when it would: why a person should confirm it first."""

    allowed: bool
    code: str | None = None
    message: str | None = None
    confirm: str | None = None


ALLOWED = Verdict(True)


def applies(definition: Workflow, snapshot: WorkflowSnapshot, env: Env, *,
            target: str | None = None, commands: Iterable[type[PersonCommand]] | None = None
            ) -> dict[str, Verdict]:
    """What each command, asked with nothing but its defaults, would answer now."""
    return {command.name: verdict(definition, snapshot, env, command.asked(), target=target)
            for command in (commands if commands is not None else COMMANDS.values())}


def verdict(definition: Workflow, snapshot: WorkflowSnapshot, env: Env, command: Command,
            *, target: str | None = None) -> Verdict:
    """What ``command`` would answer now, changing nothing.

    The command's own rule runs in a dry run up to the end of its checks
    (``Change.checked``), so this answer and the command cannot disagree. The
    checks call no hook with effects, only ``validate`` and the exit guards.
    A hook that raises there counts as allowed: the command would record the
    failure.
    """
    change = _changes_to(definition, snapshot, env, target, dry=True)[-1]
    try:
        if not paused.meets(change, command):
            type(command).rule(change, command)
    except Refused as refusal:
        return Verdict(False, refusal.code, refusal.message)
    except Allowed as allowed:
        if allowed.confirm:
            return Verdict(True, confirm=allowed.confirm)
    except HookFailed:
        pass
    return ALLOWED


def definitions_of(definition: Workflow, snapshot: WorkflowSnapshot,
                   resolve: Callable[[str], Workflow] | None = None) -> dict[str, Workflow]:
    """The definition of each instance of a tree, by instance id."""
    found = {snapshot.id: definition}
    change = Change(definition, snapshot, Env(now=0.0, resolve=resolve))
    while change.snap.nested is not None:
        change = change.child()
        found[change.snap.id] = change.definition
    return found


def deliver(definition: Workflow | None, events: Iterable[Event],
            receivers: Iterable[Callable[[Event], Any]] = ()) -> list[BaseException]:
    """Give each event to ``analytics`` then each receiver; their errors change nothing.

    An error goes to ``on_observer_error`` (whose own errors are swallowed);
    the errors are returned so the caller can log them. A receiver that raises
    an ``ExceptionGroup`` reports each of its errors.
    """
    sinks = [definition.analytics] if definition is not None and definition.analytics else []
    sinks.extend(receivers)
    report = definition.on_observer_error if definition is not None else None
    errors: list[BaseException] = []
    for event in events:
        for sink in sinks:
            try:
                sink(event)
            except Exception as raised:
                problems = list(raised.exceptions) if isinstance(raised, ExceptionGroup) \
                    else [raised]
                for problem in problems:
                    errors.append(problem)
                    if report is not None:
                        try:
                            report(problem)
                        except Exception as nested_problem:
                            errors.append(nested_problem)
    return errors
