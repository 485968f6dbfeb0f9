"""The commands people give, creating instances, deleting them, and what applies now."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from functools import cache
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction

from .. import engine
from ..conf import workflow_settings
from ..exceptions import (
    InstanceNotFound,
    InvalidState,
    MigrationRequired,
    NotAllowed,
    ReferenceTaken,
    UnknownWorkflow,
    WorkflowNotMoved,
)
from ..models import WorkflowInstance
from . import access, idempotency, reports
from .attempt_claims import claims_of
from .journal import journal_length
from .kept_signals import kept_signal_finder
from .persistence import check_state_size, definition_of, load_chain, save_outcome
from .sql import statements
from .unit import actor, after_commit, busy_as_error, env_for, give

InstanceRef = WorkflowInstance | UUID | str


def execute(instance: InstanceRef, command: engine.Command, *, user: Any = None,
            expected_revision: int | None = None, idempotency_key: str | None = None,
            fingerprint: str | None = None, lock_timeout: float | None = None
            ) -> WorkflowInstance:
    """Apply ``command`` to an instance as ``user``; raise :class:`WorkflowNotMoved` if refused.

    Access is judged under the row lock (``user=None``: trusted code, not judged).
    With an ``idempotency_key``, the same key and ``fingerprint`` (by default, a
    hash of the command) answers the first result, marked ``replayed``. The lock is
    waited for as long as the command's ``lock_timeout`` setting says, unless
    ``lock_timeout`` gives the seconds.
    """
    instance_id = id_of(instance)
    if isinstance(command, engine.PersonCommand):
        for name in command.sized:  # before taking any lock
            value = getattr(command, name)
            if isinstance(value, Mapping):
                check_state_size(value)
        if lock_timeout is None:
            lock_timeout = getattr(workflow_settings, command.lock_timeout)
    if lock_timeout is None:
        lock_timeout = workflow_settings.LOCK_TIMEOUT
    key = None
    if idempotency_key:
        key = idempotency.Key(idempotency_key, fingerprint or idempotency.fingerprint_of(
            command.name, instance_id, *(getattr(command, name) for name in _takes(command))))
    applied = give(instance_id, command, user=user, expected_revision=expected_revision,
                   key=key, lock_timeout=lock_timeout)
    if isinstance(instance, WorkflowInstance) and instance is not applied.instance:
        _copy_row(applied.instance, instance)  # the caller's object shows the new state too
    refusal = applied.refusal
    if refusal is not None:
        raise refusal
    return applied.instance


def _takes(command: engine.Command) -> tuple[str, ...]:
    return command.takes() if isinstance(command, engine.PersonCommand) else ()


def command(instance: InstanceRef, name: str, *args: Any, **options: Any) -> WorkflowInstance:
    """Give the declared command ``name``; what it takes (``reason``, ``value``) comes first
    or by name, then the options of :class:`CommandOptions`."""
    try:
        declared = engine.COMMANDS[name]
    except KeyError:
        raise ValueError(f"Unknown command {name!r}; expected one of "
                         f"{', '.join(engine.COMMANDS)}") from None
    takes = declared.takes()
    if len(args) > len(takes):
        raise TypeError(f"{name}() takes {len(takes)} value(s) besides the instance: "
                        f"{', '.join(takes) or 'none'}")
    values = dict(zip(takes, args, strict=False))
    values.update({key: options.pop(key) for key in takes if key in options})
    return execute(instance, declared(**values), **options)



def id_of(instance: InstanceRef) -> str:
    """The id as the rows spell it (``str(row.pk)``); InstanceNotFound when it is no id."""
    if isinstance(instance, WorkflowInstance):
        return str(instance.pk)
    try:
        return str(instance if isinstance(instance, UUID) else UUID(str(instance)))
    except ValueError:
        raise InstanceNotFound(f"No workflow instance {instance}") from None


def _copy_row(source: WorkflowInstance, destination: WorkflowInstance) -> None:
    for field in WorkflowInstance._meta.concrete_fields:
        setattr(destination, field.attname, getattr(source, field.attname))
    destination.replayed = getattr(source, "replayed", False)


def create(workflow: str | engine.Workflow, *, state: Mapping[str, Any] | None = None,
           owner: Any = None, user: Any = None, start: bool = False,
           reference: str | None = None, idempotency_key: str | None = None,
           fingerprint: str | None = None) -> WorkflowInstance:
    """A new ``idle`` instance (started at once with ``start=True``), owned by ``user``.

    ``reference`` is the caller's own name for it (an order number): at most one
    instance per workflow has it; a second create raises :class:`ReferenceTaken`.
    """
    workflow_id = workflow.id if isinstance(workflow, engine.Workflow) else workflow
    with reports.unit("create", "start" if start else "create", None,
                      workflow=workflow_id) as report:
        return _create(workflow_id, state=state, owner=owner, user=user, start=start,
                       reference=reference, idempotency_key=idempotency_key,
                       fingerprint=fingerprint, report=report)


def _create(workflow_id: str, *, state: Mapping[str, Any] | None, owner: Any, user: Any,
            start: bool, reference: str | None, idempotency_key: str | None,
            fingerprint: str | None, report: reports.UnitReport | None) -> WorkflowInstance:
    definition = definition_of(workflow_id)
    if definition.nested_only:
        raise WorkflowNotMoved(f'Workflow "{definition.id}" only runs as the nested child of '
                               "another workflow; create that one instead", "nested_only")
    access.judge_create(user, definition.id)
    if user is not None:  # a user cannot fake a schedule's run; trusted code may make one
        access.refuse_run_reference(definition.id, reference)
    if state is not None:
        check_state_size(state)
    owner = owner if owner is not None else actor(user)
    with transaction.atomic():
        key_row = None
        if idempotency_key:
            key_row, first = idempotency.claim(user, idempotency.Key(
                idempotency_key,
                fingerprint or idempotency.fingerprint_of("create", definition.id, state, start,
                                                          reference)))
            if not first:
                replayed = idempotency.replay(key_row)
                if report is not None:
                    report.created = replayed
                return replayed
        env = env_for(user)
        try:
            snapshot = engine.new_instance(definition, env, state)
        except engine.InvalidState as error:
            raise InvalidState(str(error), error.field_errors) from None
        check_state_size(snapshot.state)
        row = WorkflowInstance(id=UUID(snapshot.id), workflow=definition.id,
                               version=definition.version, state=snapshot.state, owner=owner,
                               reference=reference or None, revision=1)
        try:
            # A reference taken meanwhile must not undo the key: a savepoint, only then.
            with transaction.atomic() if reference else nullcontext():
                row.save(force_insert=True)
        except IntegrityError:
            taken = WorkflowInstance.objects.filter(
                workflow=definition.id, reference=row.reference).values_list("pk", flat=True)
            if row.reference is None or not taken:
                raise
            raise ReferenceTaken(definition.id, row.reference, str(taken[0])) from None
        if report is not None:
            report.created = row
        if start:  # its first step may take a signal kept for it
            outcome = engine.apply(definition, snapshot, engine.Start(),
                                   replace(env, kept_signal=kept_signal_finder([row])))
            after_commit(save_outcome([row], snapshot, outcome, actor=actor(user)), report)
        else:
            reports.after_commit(report)
        if key_row is not None:
            idempotency.remember(key_row, row, None)
    return row


def delete(instance: InstanceRef, *, user: Any = None) -> None:
    """Delete an instance with its nested children, events, attempts and deadlines.

    A nested child is deleted with its parent, never alone. The tree is locked
    first, so a command running on it finishes before the rows go.
    """
    instance_id = id_of(instance)
    with busy_as_error(workflow_settings.LOCK_TIMEOUT), transaction.atomic():
        chain = statements().lock_tree(instance_id, workflow_settings.LOCK_TIMEOUT)
        target = next(row for row in chain if str(row.pk) == instance_id)
        if target.parent_id is not None:
            raise WorkflowNotMoved(f"Instance {instance_id} is nested in instance "
                                   f"{target.parent_id}: delete that one instead", "nested")
        if user is not None:
            access.judge(user, target, "delete")
        WorkflowInstance.objects.filter(pk=target.pk).delete()


def applies(instance: WorkflowInstance, *, user: Any = None,
            commands: Iterable[type[engine.PersonCommand]] | None = None,
            running: Mapping[str, Mapping[str, Any]] | None = None
            ) -> dict[str, engine.Verdict]:
    """What each command, given with its defaults, would answer now for ``user``,
    changing nothing.

    Access first, as the command would judge it, then the engine's own rules
    (a dry run of each rule), on the rows as read here: a command that
    follows is judged again under its lock. ``running``: the instance's running
    attempts, as a page of instances read them at once (``queries.live_attempts``).
    """
    declared = list(commands if commands is not None else engine.COMMANDS.values())
    found = _dry_runs(instance, user, [(c.name, c.asked()) for c in declared], running)
    return {command.name: found[command.name] for command in declared}


def applies_to_operations(instance: WorkflowInstance, *, user: Any = None
                          ) -> dict[str, dict[str, engine.Verdict]]:
    """For each command that acts on an operation, what it would answer now for each
    operation of the current step, by the operation's id; changing nothing."""
    operations = [op.id for op in instance.snap.operations
                  if op.step == instance.current_step]
    asked = [((declared.name, op), declared(**{"operation": op}))
             for declared in engine.COMMANDS.values() if declared.acts_on == "operation"
             for op in operations]
    found = _dry_runs(instance, user, asked, None)
    by_command: dict[str, dict[str, engine.Verdict]] = {}
    for (name, op), _ in asked:
        by_command.setdefault(name, {})[op] = found[(name, op)]
    return by_command


def applies_to_journal(instance: WorkflowInstance, *, user: Any = None,
                       positions: Mapping[str, Sequence[int]]
                       ) -> dict[str, dict[str, dict[int, engine.Verdict]]]:
    """For each command offered on a journal's entries (``on_journal``: ``retry`` from a
    step), what it would answer now for each of ``positions`` (by operation id) of the
    current step's operations: ``found["retry"]["charge"][2]``; changing nothing. The
    journals' lengths are counted once each."""
    asked = [((declared.name, operation, position),
              declared(**{"operation": operation, "from_step": position}))
             for declared in engine.COMMANDS.values() if declared.on_journal
             for operation, chosen in positions.items() for position in chosen]
    found = _dry_runs(instance, user, asked, None, journal_length=cache(journal_length))
    by_command: dict[str, dict[str, dict[int, engine.Verdict]]] = {}
    for (name, operation, position), _ in asked:
        by_command.setdefault(name, {}).setdefault(operation, {})[position] = \
            found[(name, operation, position)]
    return by_command


def _dry_runs(instance: WorkflowInstance, user: Any, asked: Sequence[tuple[Any, engine.Command]],
              running: Mapping[str, Mapping[str, Any]] | None, **env: Any
              ) -> dict[Any, engine.Verdict]:
    """The verdict on each command asked (by its key): access, then the rule's dry run."""
    verdicts: dict[Any, engine.Verdict] = {}
    refusals: dict[str, NotAllowed | None] = {}
    allowed = []
    for key, command in asked:
        if command.name not in refusals:
            try:
                refusals[command.name] = access.refusal(user, instance, command.name) \
                    if user is not None else None
            except InstanceNotFound as error:
                refusals[command.name] = NotAllowed(str(error))
        refused = refusals[command.name]
        if refused is None:
            allowed.append((key, command))
        else:
            verdicts[key] = engine.Verdict(False, refused.code, str(refused))
    if not allowed:
        return verdicts
    try:
        definition, tree = load_chain(_chain_from(instance))
    except (MigrationRequired, UnknownWorkflow) as error:
        code = "migration_required" if isinstance(error, MigrationRequired) \
            else "unknown_workflow"
        verdicts.update({key: engine.Verdict(False, code, str(error)) for key, _ in allowed})
        return verdicts
    found_env = env_for(user, **env)
    tree = engine.with_claims(definition, tree, found_env,
                              claims_of(tree, lock=False, running=running))
    verdicts.update({key: engine.verdict(definition, tree, found_env, command)
                     for key, command in allowed})
    return verdicts


def _chain_from(instance: WorkflowInstance) -> list[WorkflowInstance]:
    """The instance and its nested children below it, read without locks."""
    chain = [instance]
    while chain[-1].nested_id:
        child = WorkflowInstance.objects.filter(pk=chain[-1].nested_id).first()
        if child is None:
            break
        chain.append(child)
    return chain
