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
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
from .persistence import Saved, definition_of, load_chain, save_outcome

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
                 known_claims: Mapping[str, float] | None = None) -> Applied | None:
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
    """
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
