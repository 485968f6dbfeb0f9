"""The service layer's commands: the only code that writes workflow instances.

Each command runs in one transaction: lock the tree (root first), check the
expected revision, load and migrate, run the engine with every hook in a
savepoint, save what changed with ``revision + 1``, write the events; after
commit hand new work to the runner and announce the events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any
from uuid import UUID

from django.db import transaction

from .. import clock, engine
from ..conf import workflow_settings
from ..exceptions import InstanceNotFound, InvalidState, StaleRevision, WorkflowNotMoved
from ..models import IdempotencyKey, WorkflowInstance
from ..signals import announce
from . import idempotency
from .locking import busy_as_error, lock_tree
from .persistence import check_state_size, definition_of, load_chain, save_outcome

InstanceRef = WorkflowInstance | UUID | str
logger = logging.getLogger("django_workflows")

Respond = Callable[[WorkflowInstance | None, WorkflowNotMoved | None], tuple[int, Any]]


def call_in_savepoint(hook: Callable[..., Any], *args: Any) -> Any:
    """Run a user hook so that, if it raises, its own writes are rolled back."""
    with transaction.atomic():
        return engine.context.call_directly(hook, *args)


def _actor(user: Any) -> Any:
    return user if getattr(user, "pk", None) is not None else None


def _default_response(instance: WorkflowInstance | None, refusal: WorkflowNotMoved | None
                      ) -> tuple[int, Any]:
    if refusal is not None:
        return 409, {"detail": refusal.reason, "code": refusal.code}
    assert instance is not None
    return 200, {"id": str(instance.pk), "revision": instance.revision}


def _env(user: Any) -> engine.Env:
    return engine.Env(now=clock.now(), call=call_in_savepoint, user=user,
                      resolve=definition_of)


def _hand_out(runner: Any, tokens: list[str]) -> None:
    """Give work to the runner; if it fails, the command stays committed all the same.

    Work the runner did not take stays queued, and the sweep hands it out again.
    """
    try:
        runner.enqueue(tokens)
    except Exception:
        logger.exception("The runner did not take attempts %s; the sweep will hand them "
                         "out again", ", ".join(tokens))


def _after_commit(saved: Any) -> None:
    definitions = {row.workflow: definition_of(row.workflow) for row in saved.rows.values()}
    # Announced before the work is handed out: a runner that runs it at once
    # announces that work's events, which must come after these.
    if saved.events:
        transaction.on_commit(partial(announce, definitions, list(saved.events)))
    if saved.dispatch:
        from ..runners import get_runner

        transaction.on_commit(partial(_hand_out, get_runner(), list(saved.dispatch)))


def execute(instance: InstanceRef, command: engine.Command, *, user: Any = None,
            expected_revision: int | None = None, idempotency_key: str | None = None,
            fingerprint: str | None = None, respond: Respond | None = None,
            lock_timeout: float | None = None) -> WorkflowInstance:
    """Apply ``command`` to an instance; raise :class:`WorkflowNotMoved` if refused."""
    instance_id = _id_of(instance)
    if isinstance(command, engine.UpdateState) and isinstance(command.value, Mapping):
        check_state_size(command.value)  # before taking any lock
    if lock_timeout is None:
        lock_timeout = (workflow_settings.CANCEL_LOCK_TIMEOUT
                        if isinstance(command, engine.Cancel) else workflow_settings.LOCK_TIMEOUT)
    refusal: WorkflowNotMoved | None = None
    with busy_as_error(lock_timeout), transaction.atomic():
        key_row: IdempotencyKey | None = None
        if idempotency_key:
            key_row, first = idempotency.claim(
                user, idempotency_key,
                fingerprint or idempotency.fingerprint_of(command.name, instance_id,
                                                          getattr(command, "value", None)))
            if not first:
                return idempotency.replay(key_row)
        chain = lock_tree(instance_id, timeout=lock_timeout)
        target = next(row for row in chain if str(row.pk) == instance_id)
        if expected_revision is not None and target.revision != expected_revision:
            raise StaleRevision(expected_revision, target.revision)
        definition, tree = load_chain(chain)
        outcome = engine.apply(definition, tree, command, _env(user), target=instance_id)
        saved = save_outcome(chain, tree, outcome, actor=_actor(user))
        target = saved.rows[instance_id]
        if not outcome.moved:
            refusal = _refusal(outcome, target)
        if key_row is not None:
            idempotency.remember(key_row, target, *(respond or _default_response)(
                target, refusal))
        _after_commit(saved)
    if isinstance(instance, WorkflowInstance) and instance is not target:
        _copy_row(target, instance)  # the caller's object shows the new state too
    if refusal is not None:
        raise refusal
    return target


def _id_of(instance: InstanceRef) -> str:
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


def _refusal(outcome: engine.Outcome, target: WorkflowInstance) -> WorkflowNotMoved:
    assert outcome.code is not None
    if outcome.code == "invalid_state":
        return InvalidState(outcome.message or "Invalid state", outcome.field_errors, target)
    return WorkflowNotMoved(outcome.message or outcome.code, outcome.code, instance=target,
                            field_errors=outcome.field_errors)


def create(workflow: str | engine.Workflow, *, state: Mapping[str, Any] | None = None,
           owner: Any = None, user: Any = None, start: bool = False,
           idempotency_key: str | None = None, fingerprint: str | None = None,
           respond: Respond | None = None) -> WorkflowInstance:
    """A new ``idle`` instance (started at once with ``start=True``)."""
    definition = definition_of(workflow.id if isinstance(workflow, engine.Workflow) else workflow)
    if state is not None:
        check_state_size(state)
    owner = owner if owner is not None else _actor(user)
    with transaction.atomic():
        key_row: IdempotencyKey | None = None
        if idempotency_key:
            key_row, first = idempotency.claim(
                user, idempotency_key,
                fingerprint or idempotency.fingerprint_of("create", definition.id, state, start))
            if not first:
                return idempotency.replay(key_row)
        env = _env(user)
        try:
            snapshot = engine.new_instance(definition, env, state)
        except engine.InvalidState as error:
            raise InvalidState(str(error), error.field_errors) from None
        check_state_size(snapshot.state)
        row = WorkflowInstance(id=UUID(snapshot.id), workflow=definition.id,
                               version=definition.version, state=snapshot.state, owner=owner,
                               revision=1)
        row.save(force_insert=True)
        if start:
            outcome = engine.apply(definition, snapshot, engine.Start(), env)
            saved = save_outcome([row], snapshot, outcome, actor=_actor(user))
            _after_commit(saved)
        if key_row is not None:
            idempotency.remember(key_row, row, *(respond or _created_response)(row, None))
    return row


def _created_response(instance: WorkflowInstance | None, refusal: WorkflowNotMoved | None
                      ) -> tuple[int, Any]:
    status, body = _default_response(instance, refusal)
    return (201 if status == 200 else status), body
