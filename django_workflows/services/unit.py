"""The unit of work: one command applied to one instance tree in one transaction.

Every write of an instance goes through :func:`apply_locked`, the core: on the
tree locked root first, it loads the rows (migrating what was saved under an
older version), records the attempts workers claimed meanwhile, applies the
engine, saves what changed with ``revision + 1`` and the events, and after
commit announces the events and hands new work to the runner. Each caller has
its own entry point around it:

- :func:`give`: a command given by a person or by code (its idempotency key, the
  revision the caller expects, access judged on the locked row); without a key, first
  tried in one statement by :func:`apply_if_unchanged`;
- :func:`deliver`: a signal delivered to an instance (its sender judged on the row, the
  signal recorded only once accepted: ``signals.py``);
- :func:`report`: a worker reports on its attempt, waiting for the lock;
  :func:`report_if_unchanged`: the same report written in one statement on the
  row its claim read (:func:`apply_if_unchanged`), when nothing changed it since;
- :func:`fire`: the sweep fires something due (a deadline, an attempt's timeout, a
  silent worker): a busy tree is left for its next turn.

Nothing else runs under the lock: the caller shows the result after commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from django.db import OperationalError, transaction

from .. import clock, engine, registry
from ..conf import workflow_settings
from ..exceptions import Busy, InstanceNotFound, StaleRevision
from ..models import Deadline, WorkflowInstance
from ..signals import announce, listened_to
from . import access, idempotency, reports
from .attempt_claims import claims_of
from .dispatch import hand_out
from .journal import journal_length
from .kept_signals import kept_signal_finder
from .persistence import (
    Saved,
    definition_of,
    load_chain,
    save_if_unchanged,
    save_outcome,
    writes_only_the_instance,
)
from .reports import Applied
from .sql import Statement, statements

# Statements for other rows a unit writes with the instance's, given the engine's outcome.
Writes = Callable[[engine.Outcome], Sequence[Statement]]


@dataclass(frozen=True)
class Options:
    """What a caller adds to the core: who acts (access is judged by the caller; hooks get
    them, events record them), its own rows' statements sent with the instance's
    (``writes``), the claims it knows of (token: when), which need no query, and the
    unit's report (None: nobody watches)."""

    user: Any = None
    writes: Writes | None = None
    known_claims: Mapping[str, float] | None = None
    report: reports.UnitReport | None = None


# -- the entry points -------------------------------------------------------------------


def give(instance_id: str, command: engine.Command, *, user: Any = None,
         expected_revision: int | None = None, key: idempotency.Key | None = None,
         lock_timeout: float) -> Applied:
    """A command given as ``user`` (None: trusted code, not judged).

    A replayed idempotency ``key`` returns the first result (or its refusal);
    a row no longer at ``expected_revision`` raises :class:`StaleRevision`.
    """
    with reports.unit("command", command.name, instance_id, detail=command) as report:
        if key is None:  # a key's row is written in the command's transaction: under the lock
            applied = _give_if_unchanged(instance_id, command, user, expected_revision, report)
            if applied is not None:
                return applied
        with busy_as_error(lock_timeout), transaction.atomic():
            key_row = None
            if key is not None:
                key_row, first = idempotency.claim(user, key)
                if not first:
                    replayed = idempotency.replay(key_row)
                    applied = Applied(engine.Outcome(snapshot=replayed.snap), replayed,
                                      definition_of(replayed.workflow))
                    if report is not None:
                        report.applied = applied
                    return applied
            chain = statements().lock_tree(instance_id, lock_timeout)
            target = row_of(chain, instance_id)
            if expected_revision is not None and target.revision != expected_revision:
                raise StaleRevision(expected_revision, target.revision)
            access.judge(user, target, command.name)
            applied = apply_locked(chain, instance_id, command,
                                   Options(user=user, report=report))
            if key_row is not None:
                idempotency.remember(key_row, applied.instance, applied.refusal)
    return applied


def deliver(instance_id: str, *, prepare: Callable[[WorkflowInstance], engine.Command | None],
            then: Callable[[Applied], None], user: Any, lock_timeout: float
            ) -> Applied | None:
    """A signal delivered to an instance by ``user`` (None: trusted code).

    Under the lock, ``prepare(row)`` judges the sender on the row and records the signal,
    and gives the command to apply (None: nothing to apply); ``then(applied)`` settles
    the signal's row by the outcome, in the same transaction. None when the instance is
    gone or nothing was applied."""
    with reports.unit("signal", "signal", instance_id) as report, \
            busy_as_error(lock_timeout), transaction.atomic():
        try:
            chain = statements().lock_tree(instance_id, lock_timeout)
        except InstanceNotFound:
            return None
        command = prepare(row_of(chain, instance_id))
        if command is None:
            return None
        if report is not None:
            report.detail = command  # made under the lock, once the sender was judged
        applied = apply_locked(chain, instance_id, command, Options(user=user, report=report))
        then(applied)
    return applied


def report(instance_id: str, command: engine.Command, options: Options = Options()
           ) -> Applied | None:
    """A worker's report on its attempt, under the lock; None when the instance is gone."""
    timeout = workflow_settings.LOCK_TIMEOUT
    with reports.unit("report", command.name, instance_id, detail=command) as unit_report, \
            busy_as_error(timeout), transaction.atomic():
        try:
            chain = statements().lock_tree(instance_id, timeout)
        except InstanceNotFound:
            return None
        return apply_locked(chain, instance_id, command, replace(options, report=unit_report))


def fire(instance_id: str, command: engine.Command, *,
         still_due: Callable[[], bool] | None = None,
         then: Callable[[Applied], None] | None = None,
         fired: Deadline | None = None) -> Applied | None:
    """Something due fired by the sweep; None when the tree is busy (the next sweep looks
    again), the instance is gone, or ``still_due()``, asked under the lock, says it no
    longer is. ``then(applied)`` writes the caller's own rows in the same transaction.
    ``fired``: the deadline row it fires (its report says when it was due)."""
    timeout = workflow_settings.LOCK_TIMEOUT
    with reports.unit("fire", command.name, instance_id, detail=command,
                      fired=fired) as report, busy_as_error(timeout), transaction.atomic():
        try:
            chain = statements().lock_tree_unless_busy(instance_id, timeout)
        except InstanceNotFound:
            return None
        if chain is None or (still_due is not None and not still_due()):
            return None
        applied = apply_locked(chain, instance_id, command, Options(report=report))
        if then is not None:
            then(applied)
    return applied


# -- the core ---------------------------------------------------------------------------


def apply_locked(chain: list[WorkflowInstance], instance_id: str, command: engine.Command,
                 options: Options) -> Applied:
    """Apply ``command`` to ``instance_id`` of the locked ``chain`` (root first) and save
    it; call it inside the transaction that holds the locks."""
    user, report = options.user, options.report
    if report is not None:
        report.locked(row_of(chain, instance_id))
    definition, tree = load_chain(chain)
    env = env_for(user, kept_signal=kept_signal_finder(chain))
    outcome = engine.apply(definition, tree, command, env, target=instance_id,
                           claimed=claims_of(tree, known=options.known_claims))
    saved = save_outcome(chain, tree, outcome, actor=actor(user),
                         also=options.writes(outcome) if options.writes is not None else ())
    applied = Applied(outcome, saved.rows[instance_id], definition, saved.signals)
    after_commit(saved, report, applied)
    return applied


def row_of(chain: list[WorkflowInstance], instance_id: str) -> WorkflowInstance:
    return next(row for row in chain if str(row.pk) == instance_id)


def call_in_savepoint(hook: Callable[..., Any], *args: Any) -> Any:
    """Run a user hook so that, if it raises, its own writes are rolled back."""
    with transaction.atomic():
        return engine.context.call_directly(hook, *args)


def env_for(user: Any, **changes: Any) -> engine.Env:
    """The engine's Env for a command by ``user``; ``changes``: other fields than these."""
    pk = getattr(user, "pk", None)
    return engine.Env(**{"now": clock.now(), "call": call_in_savepoint, "user": user,
                         "resolve": definition_of, "actor": None if pk is None else str(pk),
                         "journal_length": journal_length, **changes})


def actor(user: Any) -> Any:
    """The user to record on events (None for code that acts without one)."""
    return user if getattr(user, "pk", None) is not None else None


@contextmanager
def busy_as_error(seconds: float) -> Iterator[None]:
    """Turn a lock wait that timed out into :class:`Busy` (wrap the transaction in it)."""
    try:
        yield
    except OperationalError as error:
        if statements().is_lock_timeout(error):
            raise Busy(f"The instance stayed locked for more than {seconds:g}s; "
                       "try again") from error
        raise


# -- a worker's report without the lock -------------------------------------------------


class NeedsLock(BaseException):
    """The command would run user code: it runs under the lock, or not at all.

    A BaseException, so that the engine's handling of failing hooks lets it through.
    """


def _under_the_lock_only(*args: Any) -> Any:
    """A hook, or the look for a kept signal: neither runs without the lock."""
    raise NeedsLock()


def report_if_unchanged(read: WorkflowInstance, command: engine.Command,
                        options: Options = Options(), *,
                        loaded: engine.WorkflowSnapshot | None = None) -> Applied | None:
    """A worker's report applied to the row its claim read (``read``; ``loaded``: that row
    as the claim loaded it, so it is not read from JSON twice) by :func:`apply_if_unchanged`;
    None when it must run under the lock (:func:`report`), having written nothing."""
    with reports.unit("report", command.name, str(read.pk), workflow=read.workflow,
                      detail=command) as report:
        return apply_if_unchanged(read, command, replace(options, report=report),
                                  loaded=loaded)


def _give_if_unchanged(instance_id: str, command: engine.Command, user: Any,
                       expected_revision: int | None,
                       report: reports.UnitReport | None) -> Applied | None:
    """:func:`give` on the row as read without the lock, by :func:`apply_if_unchanged`:
    two round trips instead of four (``BEGIN``, the lock, the write, ``COMMIT``); None when
    it must run under the lock, having written nothing.

    Access is judged on that row, and the write happens only if the row is still that
    one when it is locked, so the judgement is the one the lock would give. A refusal
    (of access, of the revision, of the rule) is given under the lock, never from this
    read; so is a judgement that would call the definition's ``permission`` rule.
    """
    sql = statements()
    if not sql.writes_if_unchanged or contended(instance_id):
        return None
    read = sql.row(instance_id)
    if read is None or (expected_revision is not None and read.revision != expected_revision):
        return None
    if user is not None:
        definition = registry.find(read.workflow)
        if definition is None or definition.permission is not None:
            return None  # the rule is user code
        try:
            if access.refusal(user, read, command.name) is not None:
                return None
        except InstanceNotFound:
            return None
    return apply_if_unchanged(read, command, Options(user=user, report=report))


def apply_if_unchanged(read: WorkflowInstance, command: engine.Command,
                       options: Options = Options(), *,
                       loaded: engine.WorkflowSnapshot | None = None) -> Applied | None:
    """``command`` applied to ``read``, a row read without the lock, and written in one
    statement only if that row is unchanged; None when it must run under the lock, having
    written nothing.

    It must: on a database without the one-statement write, for a tree of more
    than one instance, for a row saved under another version, when the tree holds
    work handed out whose claim the caller does not know (its row must be locked),
    when the command would call a hook (user code never runs outside the lock: it
    could run twice), when it is refused or writes other rows (attempts,
    deadlines, tasks), and when the row moved on or another transaction holds its
    lock.
    """
    sql = statements()
    if not sql.writes_if_unchanged or read.parent_id is not None or read.nested_id \
            or contended(str(read.pk)):
        return None
    known = options.known_claims or {}
    definition = definition_of(read.workflow)
    if read.version != definition.version:
        return None
    tree = loaded if loaded is not None else engine.load(definition, read.engine_data())
    if any(token not in known for _, token in engine.unclaimed_tokens(tree)):
        return None  # a claim the caller does not know of may be on its attempt's row
    try:
        outcome = engine.apply(definition, tree, command,
                               env_for(options.user, call=_under_the_lock_only,
                                       kept_signal=_under_the_lock_only),
                               claimed=claims_of(tree, known=known))
    except NeedsLock:
        return None
    if not outcome.moved or not writes_only_the_instance(outcome):
        return None
    revision, began = read.revision, time.perf_counter()
    saved = save_if_unchanged(read, tree, outcome, actor=actor(options.user),
                              also=options.writes(outcome) if options.writes is not None
                              else ())
    if saved is None:
        lost_a_race(str(read.pk))
        return None
    report = options.report
    if report is not None:
        report.wrote_at_once(read, revision, began)
    applied = Applied(outcome, saved.rows[str(read.pk)], definition)
    after_commit(saved, report, applied)
    return applied


# An instance whose one-statement write lately found it moved on or locked by another
# writer, and until when: its commands go straight to the lock, since on a contended row
# the read and the engine's work would mostly be thrown away.
_contended: dict[str, float] = {}
CONTENDED_SECONDS = 1.0
CONTENDED_KEPT = 1000  # instances remembered by a process at most


def contended(instance_id: str) -> bool:
    until = _contended.get(instance_id)
    return until is not None and until > time.monotonic()


def lost_a_race(instance_id: str) -> None:
    now = time.monotonic()
    if len(_contended) >= CONTENDED_KEPT:
        for key, until in list(_contended.items()):
            if until <= now:
                _contended.pop(key, None)
        if len(_contended) >= CONTENDED_KEPT:
            _contended.clear()
    _contended[instance_id] = now + CONTENDED_SECONDS


# -- after commit -----------------------------------------------------------------------


def after_commit(saved: Saved, report: reports.UnitReport | None = None,
                 applied: Applied | None = None) -> None:
    """Once the transaction commits: the unit's report, then the saved events announced,
    then the new work handed out (each runs in that order: a runner that runs the work at
    once reports and announces that work's own, which must come after these)."""
    if report is not None:
        report.applied = applied or report.applied
        report.attempts_made, report.deadlines_made = saved.attempts_made, saved.deadlines_made
        reports.after_commit(report)
    # Nobody listening (no receiver of the signal, no analytics): nothing to announce.
    if saved.events and listened_to(saved.rows.values()):
        definitions = {row.workflow: definition_of(row.workflow) for row in saved.rows.values()}
        transaction.on_commit(partial(announce, definitions, list(saved.events)))
    if saved.dispatch:
        # The runner the settings name now, when the work was made (RUNNER, a dotted path).
        transaction.on_commit(partial(hand_out, workflow_settings.RUNNER(),
                                      list(saved.dispatch)))
