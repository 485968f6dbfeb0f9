"""The unit of work: one command applied to one instance tree in one transaction.

Every write of an instance goes through :func:`unit_of_work`, for the
commands people give and for what workers and the sweep report alike:

1. claim the idempotency key (a replay answers the first result);
2. lock the tree, root first (or skip it when busy, for the sweep);
3. check the expected revision and judge access on the rows as they are now;
4. load (migrating what was saved under an older version) and apply the engine;
5. save what changed with ``revision + 1`` and the events, remember the key;
6. after commit, announce the events and hand new work to the runner.

Nothing else runs under the lock: the caller shows the result after commit.

A worker reporting its attempt has read the instance already, when it claimed it
(``read=``). If no one changed the instance since and the report runs no user code
and writes nothing but the instance, its events and the attempt's row, the unit
applies the report to that row and writes it in one statement that first checks
the row is as read (:func:`apply_if_unchanged`): no ``BEGIN``, no lock to wait
for, no second read. Otherwise, or if the row moved on, it runs as above.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from django.db import transaction

from .. import clock, engine
from ..exceptions import InstanceNotFound, InvalidState, StaleRevision, WorkflowNotMoved
from ..models import WorkflowInstance
from ..signals import announce
from . import access, idempotency
from .claims import claims_of
from .locking import busy_as_error, lock_tree, root_id
from .persistence import (
    Saved,
    definition_of,
    load_chain,
    save_if_unchanged,
    save_outcome,
    writes_only_the_instance,
)
from .statements import statements

logger = logging.getLogger("django_workflows")


# Statements for other rows a unit writes with the instance's, given the engine's outcome.
Writes = Callable[[engine.Outcome], Sequence[tuple[str, list[Any]]]]


@dataclass(frozen=True)
class Applied:
    """What a unit of work did: the engine's outcome and the target's saved row."""

    outcome: engine.Outcome
    instance: WorkflowInstance
    definition: engine.Workflow  # the root's

    @property
    def refusal(self) -> WorkflowNotMoved | None:
        """The refusal as the services raise it, or None when the command moved."""
        outcome = self.outcome
        if outcome.moved:
            return None
        assert outcome.code is not None
        if outcome.code == "invalid_state":
            return InvalidState(outcome.message or "Invalid state", outcome.field_errors,
                                self.instance)
        return WorkflowNotMoved(outcome.message or outcome.code, outcome.code,
                                instance=self.instance, field_errors=outcome.field_errors)


def call_in_savepoint(hook: Callable[..., Any], *args: Any) -> Any:
    """Run a user hook so that, if it raises, its own writes are rolled back."""
    with transaction.atomic():
        return engine.context.call_directly(hook, *args)


def env_for(user: Any) -> engine.Env:
    pk = getattr(user, "pk", None)
    return engine.Env(now=clock.now(), call=call_in_savepoint, user=user,
                      resolve=definition_of, actor=None if pk is None else str(pk))


def actor(user: Any) -> Any:
    """The user to record on events (None for code that acts without one)."""
    return user if getattr(user, "pk", None) is not None else None


def unit_of_work(instance_id: str, command: engine.Command, *, lock_timeout: float,
                 user: Any = None, action: str | None = None,
                 expected_revision: int | None = None, key: idempotency.Key | None = None,
                 skip_locked: bool = False, missing_ok: bool = False,
                 still_due: Callable[[], bool] | None = None,
                 then: Callable[[Applied], None] | None = None,
                 writes: Writes | None = None,
                 known_claims: Mapping[str, float] | None = None,
                 read: WorkflowInstance | None = None) -> Applied | None:
    """Apply ``command`` to the instance ``instance_id`` (see the module's docstring).

    ``action`` is what access is judged for (None: not judged, for the worker's
    reports). None is returned when ``skip_locked`` found the tree busy,
    ``missing_ok`` found it deleted, or ``still_due()`` (asked under the lock)
    says the command is no longer due. ``then(applied)`` runs in the same
    transaction, for the caller's own rows (an attempt's, a deadline's); ``writes(outcome)``
    gives statements of such rows to send with the instance's own.
    A replayed idempotency key returns the first result (or raises its refusal).
    Attempts workers claimed since the snapshot was saved (``services/claims.py``)
    are recorded first; ``known_claims`` names those the caller knows (token: when).
    ``read``: the instance as the caller read it without its lock, for
    :func:`apply_if_unchanged` (only with none of the options that need the lock).
    """
    if read is not None:
        assert action is None and key is None and expected_revision is None
        assert still_due is None and then is None
        applied = apply_if_unchanged(read, command, writes=writes, known_claims=known_claims)
        if applied is not None:
            return applied
    with busy_as_error(lock_timeout), transaction.atomic():
        key_row = None
        if key is not None:
            key_row, first = idempotency.claim(user, key)
            if not first:
                replayed = idempotency.replay(key_row)
                return Applied(engine.Outcome(snapshot=replayed.snap), replayed,
                               definition_of(replayed.workflow))
        try:
            chain = None if skip_locked and _root_is_busy(instance_id) \
                else lock_tree(instance_id, timeout=lock_timeout)
        except InstanceNotFound:
            if missing_ok:
                return None
            raise
        if chain is None or (still_due is not None and not still_due()):
            return None
        target = next(row for row in chain if str(row.pk) == instance_id)
        if expected_revision is not None and target.revision != expected_revision:
            raise StaleRevision(expected_revision, target.revision)
        if action is not None:
            access.judge(user, target, action)
        definition, tree = load_chain(chain)
        outcome = engine.apply(definition, tree, command, env_for(user), target=instance_id,
                               claimed=claims_of(tree, known=known_claims))
        saved = save_outcome(chain, tree, outcome, actor=actor(user),
                             also=writes(outcome) if writes is not None else ())
        applied = Applied(outcome, saved.rows[instance_id], definition)
        if key_row is not None:
            idempotency.remember(key_row, applied.instance, applied.refusal)
        if then is not None:
            then(applied)
        after_commit(saved)
    return applied


class NeedsLock(BaseException):
    """The command would run user code: it runs under the lock, or not at all.

    A BaseException, so that the engine's handling of failing hooks lets it through.
    """


def _under_the_lock_only(hook: Callable[..., Any], *args: Any) -> Any:
    raise NeedsLock()


def apply_if_unchanged(read: WorkflowInstance, command: engine.Command, *,
                       writes: Writes | None = None,
                       known_claims: Mapping[str, float] | None = None) -> Applied | None:
    """Apply ``command`` to the row ``read`` without its lock, written only if it is
    unchanged; None when the unit must run under the lock (nothing was written).

    It must: on a database without the one-statement write, for a tree of more
    than one instance, for a row saved under another version, when the tree holds
    work handed out whose claim the caller does not know (its row must be locked),
    when the command would call a hook (user code never runs outside the lock: it
    could run twice), when it is refused or writes other rows (attempts,
    deadlines, tasks), and when the row moved on or another transaction holds its
    lock.
    """
    if not statements().writes_if_unchanged or read.parent_id is not None or read.nested_id:
        return None
    known = known_claims or {}
    definition = definition_of(read.workflow)
    if read.version != definition.version:
        return None
    tree = engine.load(definition, read.engine_data())
    if any(token not in known for _, token in engine.unclaimed_tokens(tree)):
        return None  # a claim the caller does not know of may be on its attempt's row
    claimed = claims_of(tree, known=known)
    try:
        outcome = engine.apply(definition, tree, command,
                               replace(env_for(None), call=_under_the_lock_only),
                               claimed=claimed)
    except NeedsLock:
        return None
    if not outcome.moved or not writes_only_the_instance(outcome):
        return None
    saved = save_if_unchanged(read, tree, outcome,
                              also=writes(outcome) if writes is not None else ())
    if saved is None:
        return None
    after_commit(saved)
    return Applied(outcome, saved.rows[str(read.pk)], definition)


def _root_is_busy(instance_id: str) -> bool:
    """Lock the tree's root unless another transaction holds it (then True: busy)."""
    root = WorkflowInstance.objects.select_for_update(skip_locked=True).filter(
        pk=root_id(instance_id)).values_list("pk", flat=True)
    return not list(root)


def _hand_out(runner: Any, tokens: list[str]) -> None:
    """Give work to the runner; if it fails, the command stays committed all the same.

    Work the runner did not take stays queued, and the sweep hands it out again.
    """
    try:
        runner.enqueue(tokens)
    except Exception:
        logger.exception("The runner did not take attempts %s; the sweep will hand them "
                         "out again", ", ".join(tokens))


def after_commit(saved: Saved) -> None:
    """Announce the saved events, then hand out the new work, once the transaction commits."""
    definitions = {row.workflow: definition_of(row.workflow) for row in saved.rows.values()}
    # Announced before the work is handed out: a runner that runs it at once
    # announces that work's events, which must come after these.
    if saved.events:
        transaction.on_commit(partial(announce, definitions, list(saved.events)))
    if saved.dispatch:
        from ..runners import get_runner

        transaction.on_commit(partial(_hand_out, get_runner(), list(saved.dispatch)))
