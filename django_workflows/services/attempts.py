"""The worker's side of the service: claim an attempt, beat, report how it ended,
and fire what fell due (deadlines, expired heartbeats, attempt timeouts).

A claim is one fenced ``UPDATE`` of the attempt's own row (``services/claims.py``
says how the instance learns of it); the rest are short units of work under
the instance's row lock. User code never runs inside either.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

from django.utils import timezone

from .. import clock, engine
from ..conf import workflow_settings
from ..models import Attempt, AttemptStatus, Deadline, WorkflowInstance
from .attempt_statements import attempt_statements
from .persistence import definition_of
from .unit import Applied, Writes, unit_of_work

logger = logging.getLogger("django_workflows")


def _report(token: str, instance_id: Any, command: engine.Command, *,
            skip_locked: bool = False, then: Any = None, writes: Writes | None = None,
            known_claims: dict[str, float] | None = None,
            read: WorkflowInstance | None = None) -> Applied | None:
    if instance_id is None:
        instance_id = Attempt.objects.filter(token=token).values_list(
            "instance_id", flat=True).first()
        if instance_id is None:
            return None
    return unit_of_work(str(instance_id), command, lock_timeout=workflow_settings.LOCK_TIMEOUT,
                        missing_ok=True, skip_locked=skip_locked, then=then,
                        writes=writes, known_claims=known_claims, read=read)


@dataclass(frozen=True)
class Claimed:
    """A claimed attempt: the work to run, and when it was claimed."""

    work: engine.Work
    at: float
    row: WorkflowInstance  # its instance as the claim read it


def claim_attempt(token: str, worker: str = "") -> Claimed | None:
    """Claim a queued attempt; the work to run, or None when it is stale or taken.

    One fenced ``UPDATE`` of the attempt's row (queued -> running, with its
    heartbeat and its own timeout), committed at once, and a read of its
    instance for the work to run (``services/attempt_statements.py``).
    """
    at = clock.now()
    claimed, row = attempt_statements().claim(token, at, timezone.now(), worker)
    if not claimed:
        logger.info("Attempt %s was stopped or taken by another worker, or its instance "
                    "was deleted; not running it", token)
        return None
    work = None if row is None else _work_of(token, row)
    if row is None or work is None:  # the instance moved on before the claim
        logger.info("Attempt %s is stale; not running it", token)
        Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING).update(
            status=AttemptStatus.DROPPED, finished_at=timezone.now(), live_status="")
        return None
    return Claimed(work, at, row)


def _work_of(token: str, row: WorkflowInstance) -> engine.Work | None:
    """The work ``token`` names in its instance as saved."""
    definition = definition_of(row.workflow)
    snapshot = engine.load(definition, row.engine_data(), nested=row.parent_id is not None)
    return engine.find_work({snapshot.id: definition}, snapshot, token)


def finish_attempt(token: str, result: engine.AttemptOutcome, *,
                   instance_id: Any = None, claimed_at: float | None = None,
                   read: WorkflowInstance | None = None) -> bool:
    """Record how an attempt ended; False when its token was stale (result dropped).

    The attempt's row gets the last progress and log lines. ``claimed_at``, from
    its worker, records the claim with it without asking the attempt's row;
    ``read``, the instance as the claim read it, may spare the lock
    (:func:`~.unit.apply_if_unchanged`).
    """
    def record(outcome: engine.Outcome) -> list[tuple[str, list[Any]]]:
        values: dict[str, Any] = {"finished_at": timezone.now(), "live_status": ""}
        if result.progress is not None:
            values["progress"] = asdict(result.progress)
        if result.logs:
            values["logs"] = list(result.logs)
        if not outcome.moved:
            values["status"] = AttemptStatus.DROPPED
        # Told to stop (cancel, timeout): whatever it returned was discarded.
        return [attempt_statements().update_of(token, values,
                                               finished_unless_stopped=outcome.moved)]

    # The attempt's row is written with the instance's (one round trip on PostgreSQL).
    applied = _report(token, instance_id, engine.AttemptFinished(token, result), writes=record,
                      known_claims=None if claimed_at is None else {token: claimed_at},
                      read=read)
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
    def record(applied: Applied) -> None:
        # Only if still running: its result may have come in since the sweep looked.
        Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING).update(
            status=AttemptStatus.INTERRUPTED, finished_at=timezone.now(), live_status="")

    applied = _report(token, instance_id, engine.AttemptInterrupted(token), skip_locked=True,
                      then=record)
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

    applied = unit_of_work(str(deadline.instance_id),
                           engine.DeadlineDue(deadline.kind, deadline.token),  # type: ignore[arg-type]
                           lock_timeout=workflow_settings.LOCK_TIMEOUT, missing_ok=True,
                           skip_locked=True, still_due=still_due, then=record)
    return applied is not None and applied.outcome.moved


def fire_attempt_timeout(token: str, instance_id: Any) -> bool:
    """A running attempt outlived its own timeout (on its row: ``timeout_at``)."""
    def still_due() -> bool:
        return Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING,
                                      timeout_at__isnull=False).exists()

    def record(applied: Applied) -> None:
        Attempt.objects.filter(token=token).update(timeout_at=None)  # fired: not again

    applied = unit_of_work(str(instance_id), engine.DeadlineDue("attempt-timeout", token),
                           lock_timeout=workflow_settings.LOCK_TIMEOUT, missing_ok=True,
                           skip_locked=True, still_due=still_due, then=record)
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
