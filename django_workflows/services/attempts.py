"""The worker's side of the service: claim an attempt, beat, report how it ended,
and fire what fell due (deadlines, expired heartbeats, attempt timeouts).

A claim is one fenced ``UPDATE`` of the attempt's own row (``services/attempt_claims.py``
says how the instance learns of it); the rest are short units of work under
the instance's row lock. User code never runs inside either.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from .. import clock, engine
from ..conf import workflow_settings
from ..exceptions import Busy
from ..models import Attempt, AttemptStatus, Deadline, WorkflowInstance
from .persistence import definition_of
from .reports import Applied
from .slots import give_slot_on, hand_out_waiting
from .sql import Statement, statements
from .unit import Options, fire, report, report_if_unchanged

logger = logging.getLogger("django_workflows")


@dataclass(frozen=True)
class Claimed:
    """A claimed attempt: the work to run, and when it was claimed."""

    work: engine.Work
    at: float
    row: WorkflowInstance  # its instance as the claim read it
    snapshot: engine.WorkflowSnapshot  # that row, loaded (its result is applied to it)
    # The attempt's enqueued_at and trace_context, when the claim read them (observers).
    stored: tuple[Any, Any] | None = None
    limit_key: str = ""  # its Limit's key as it was handed out: its end gives the slot on


def claim_attempt(token: str, worker: str = "") -> Claimed | None:
    """Claim a queued attempt; the work to run, or None when it is stale or taken.

    One fenced ``UPDATE`` of the attempt's row (queued -> running, with its
    heartbeat and its own timeout), committed at once, and a read of its
    instance for the work to run (``services/sql/attempts.py``).
    """
    at = clock.now()
    claimed, row, stored, limit_key = statements().attempts.claim(token, at, timezone.now(),
                                                                   worker)
    if not claimed:
        logger.info("Attempt %s was stopped or taken by another worker, or its instance "
                    "was deleted; not running it", token)
        return None
    work = snapshot = None
    if row is not None:
        definition = definition_of(row.workflow)
        snapshot = engine.load(definition, row.engine_data(), nested=row.parent_id is not None)
        work = engine.find_work({snapshot.id: definition}, snapshot, token)
    if row is None or snapshot is None or work is None:  # it moved on before the claim
        logger.info("Attempt %s is stale; not running it", token)
        Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING).update(
            status=AttemptStatus.DROPPED, finished_at=timezone.now(), live_status="")
        give_slot_on(token)
        return None
    return Claimed(work, at, row, snapshot, stored, limit_key or "")


def finish_attempt(token: str, result: engine.AttemptOutcome, *,
                   instance_id: Any = None, claimed_at: float | None = None) -> bool:
    """Record how an attempt ended, under the instance's lock; False when its token was
    stale (the result is dropped) or its instance is gone.

    The attempt's row gets the last progress and log lines, in the same round trip
    as the instance where the database allows. ``claimed_at``, from its worker,
    records the claim with it without asking the attempt's row. A lock that stays taken
    loses nothing: the result is kept on the attempt's row first (:func:`report_kept`).
    """
    instance_id = instance_id or _instance_of(token)
    if instance_id is None:
        return False
    finished = report_kept(str(instance_id), token, result, claimed_at)
    give_slot_on(token)
    return finished


def finish_claimed(claimed: Claimed, result: engine.AttemptOutcome) -> bool:
    """:func:`finish_attempt` for the worker that claimed it: written in one statement on
    the instance as its claim read it if no one changed it since
    (:func:`~.unit.report_if_unchanged`), else kept on its row and reported under the
    lock (:func:`report_kept`). Its end gives its key's slot on, the key it was handed
    out under (the definition may say otherwise by now)."""
    token = claimed.work.token
    applied = report_if_unchanged(claimed.row, engine.AttemptFinished(token, result),
                                  _finish_options(token, result, claimed.at),
                                  loaded=claimed.snapshot)
    finished = _finished(token, applied) if applied is not None else report_kept(
        claimed.work.snapshot.id, token, result, claimed.at)
    if claimed.limit_key:
        hand_out_waiting([claimed.limit_key])
    return finished


TRIES = 3  # a report whose instance stays locked is tried this often, then left to the sweep
BETWEEN_TRIES = 0.5  # seconds before the second try, twice that before the third


def report_kept(instance_id: str, token: str, result: engine.AttemptOutcome,
                claimed_at: float | None) -> bool:
    """Keep the result on the attempt's row (status ``reported``), then report it under the
    instance's lock, tried again a few times while the lock stays taken; the sweep
    applies what is still kept (:func:`apply_kept_result`). Nothing a worker did is lost
    to a busy row, and the work does not run again. True unless the result was stale."""
    kept = statements().attempts.changed_by(statements().attempts.update_of(token, {
        "status": AttemptStatus.REPORTED, "result": engine.plain_json(result),
        "finished_at": timezone.now(), "live_status": "", **_last_words(result)},
        only_if=AttemptStatus.RUNNING))
    command = engine.AttemptFinished(token, result)
    options = _finish_options(token, result, claimed_at, kept=bool(kept))
    for attempt in range(TRIES if kept else 1):
        if attempt:
            time.sleep(BETWEEN_TRIES * 2 ** (attempt - 1))
        try:
            return _finished(token, report(instance_id, command, options))
        except Busy:
            if not kept:
                raise
    logger.warning("Attempt %s: its instance %s stayed locked; its result is kept, and the "
                   "sweep applies it", token, instance_id)
    return True


def still_trying() -> timedelta:
    """How long a worker may still be trying to report a result it kept: the sweep applies
    it after that."""
    tries = float(workflow_settings.LOCK_TIMEOUT) * TRIES + BETWEEN_TRIES * 2 ** TRIES
    return timedelta(seconds=tries)


def apply_kept_result(token: str, instance_id: Any, result: Any) -> bool:
    """A result a worker kept on its attempt's row and could not report (its instance
    stayed locked), applied by the sweep; False when it was stale by then."""
    outcome = engine.AttemptOutcome.from_json(result or {})
    finished = _finished(token, report(str(instance_id), engine.AttemptFinished(token, outcome),
                                       _finish_options(token, outcome, None, kept=True)))
    give_slot_on(token)
    return finished


def _last_words(result: engine.AttemptOutcome) -> dict[str, Any]:
    """The last progress and log lines an attempt reported, for its row."""
    values: dict[str, Any] = {}
    if result.progress is not None:
        values["progress"] = asdict(result.progress)
    if result.logs:
        values["logs"] = list(result.logs)
    return values


def _finish_options(token: str, result: engine.AttemptOutcome, claimed_at: float | None, *,
                    kept: bool = False) -> Options:
    """How the attempt's row is written with its instance's: finished (or dropped when it
    was stale or told to stop). ``kept``: its result was kept on the row first, so the
    row is written only while it still is (whoever applies it first, applies it)."""
    def record(outcome: engine.Outcome) -> list[Statement]:
        values: dict[str, Any] = {"live_status": ""}
        if kept:
            values["result"] = None
        else:
            values.update(finished_at=timezone.now(), **_last_words(result))
        if not outcome.moved:
            values["status"] = AttemptStatus.DROPPED
        # Told to stop (cancel, timeout): whatever it returned was discarded.
        return [statements().attempts.update_of(
            token, values, finished_unless_stopped=outcome.moved,
            only_if=AttemptStatus.REPORTED if kept else None)]

    return Options(writes=record,
                   known_claims=None if claimed_at is None else {token: claimed_at})


def _instance_of(token: str) -> Any:
    return Attempt.objects.filter(token=token).values_list("instance_id", flat=True).first()


def _finished(token: str, applied: Applied | None) -> bool:
    if applied is None:
        return False
    if not applied.outcome.moved:
        logger.warning("Dropped the stale result of attempt %s: %s", token,
                       applied.outcome.message)
    return applied.outcome.moved


def interrupt_attempt(token: str, *, instance_id: Any = None) -> bool:
    """The attempt's worker died: apply the interruption rules.

    False when the instance is busy (the next sweep looks again) or the attempt
    was no longer the current one.
    """
    instance_id = instance_id or _instance_of(token)
    if instance_id is None:
        return False

    def record(applied: Applied) -> None:
        # Only if still running: its result may have come in since the sweep looked.
        Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING).update(
            status=AttemptStatus.INTERRUPTED, finished_at=timezone.now(), live_status="")

    applied = fire(str(instance_id), engine.AttemptInterrupted(token), then=record)
    give_slot_on(token)  # interrupted, it holds its slot no longer
    return applied is not None and applied.outcome.moved


def fire_deadline(deadline: Deadline | int) -> bool:
    """Fire one due deadline (its row or id); False if a sweep or a command got there first."""
    if not isinstance(deadline, Deadline):
        found = Deadline.objects.filter(pk=deadline).first()
        if found is None:
            return False
        deadline = found
    pk = deadline.pk

    def still_due() -> bool:
        # Deadline rows are locked after the instance, as commands do: never a deadlock.
        return Deadline.objects.filter(pk=pk).exists()

    def record(applied: Applied) -> None:
        Deadline.objects.filter(pk=pk).delete()

    due = engine.DeadlineDue(deadline.kind,  # type: ignore[arg-type]  # stored from a DeadlineKind
                             deadline.token)
    applied = fire(str(deadline.instance_id), due, still_due=still_due, then=record,
                   fired=deadline)
    return applied is not None and applied.outcome.moved


def fire_attempt_timeout(token: str, instance_id: Any) -> bool:
    """A running attempt outlived its own timeout (on its row: ``timeout_at``)."""
    def still_due() -> bool:
        return Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING,
                                      timeout_at__isnull=False).exists()

    def record(applied: Applied) -> None:
        Attempt.objects.filter(token=token).update(timeout_at=None)  # fired: not again

    applied = fire(str(instance_id), engine.DeadlineDue("attempt-timeout", token),
                   still_due=still_due, then=record)
    return applied is not None and applied.outcome.moved


def beat(token: str, *, live_status: str, progress: engine.Progress | None,
         logs: list[str], write: bool) -> str | None:
    """A running attempt's heartbeat: write what it reported (``write``), read its stop flag.

    Only the attempt's own row is touched, never the instance's: a busy
    operation does not hold up commands. A beat after the result was recorded
    changes nothing. Returns why the attempt must stop, or None.
    """
    rows = Attempt.objects.filter(token=token)
    if write:
        rows.filter(status=AttemptStatus.RUNNING).update(
            heartbeat_at=timezone.now(), live_status=live_status,
            progress=asdict(progress) if progress else None, logs=list(logs))
    return rows.values_list("stop_reason", flat=True).first() or None
