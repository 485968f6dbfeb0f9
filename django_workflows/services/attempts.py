"""The worker's side of the service: claim an attempt, beat, report how it ended,
and fire what fell due (deadlines, expired heartbeats, attempt timeouts).

A claim is one fenced ``UPDATE`` of the attempt's own row (``services/claims.py``
says how the instance learns of it); the rest are short units of work under
the instance's row lock. User code never runs inside either.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, cast

from django.db import connection
from django.db.models import Field
from django.utils import timezone

from .. import clock, engine
from ..conf import workflow_settings
from ..models import Attempt, AttemptStatus, Deadline
from .persistence import definition_of, to_datetime
from .statements import statements
from .unit import Applied, unit_of_work

logger = logging.getLogger("django_workflows")


def _field(name: str) -> Field[Any, Any]:
    """``Attempt``'s concrete field ``name`` (``get_field`` is typed to return relations too)."""
    return cast("Field[Any, Any]", Attempt._meta.get_field(name))


def _column(field: Field[Any, Any]) -> str:
    """The quoted column of a concrete field (it has one; ``column`` is typed optional)."""
    return connection.ops.quote_name(cast(str, field.column))


def _update_attempt(token: str, values: dict[str, Any], *, only_if: str | None = None,
                    finished_unless_stopped: bool = False) -> int:
    """``UPDATE`` one attempt's row as ``filter(token=...).update(...)`` would, without
    building the query each time (the ORM's query building was a fifth of a worker's CPU);
    the number of rows it changed.

    ``only_if``: only while its status is this one (the fence of a claim). With
    ``finished_unless_stopped``, its status becomes finished, or dropped if it
    was told to stop.
    """
    meta, qn = Attempt._meta, connection.ops.quote_name
    fields = [_field(name) for name in values]
    params = [field.get_db_prep_save(values[field.name], connection) for field in fields]
    assignments = ", ".join(f"{_column(field)} = %s" for field in fields)
    status_column = _column(_field("status"))
    status = (f", {status_column} = CASE WHEN "
              f"{_column(_field('stop_reason'))} = %s THEN %s ELSE %s END"
              if finished_unless_stopped else "")
    if finished_unless_stopped:
        params += ["", AttemptStatus.FINISHED.value, AttemptStatus.DROPPED.value]
    fence = f" AND {status_column} = %s" if only_if is not None else ""
    sql = (f"UPDATE {qn(meta.db_table)} SET {assignments}{status} "
           f"WHERE {_column(meta.pk)} = %s{fence}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, token, *([only_if] if only_if is not None else [])])
        changed: int = cursor.rowcount
        return changed


def _report(token: str, instance_id: Any, command: engine.Command, *,
            skip_locked: bool = False, then: Any = None,
            known_claims: dict[str, float] | None = None) -> Applied | None:
    if instance_id is None:
        instance_id = Attempt.objects.filter(token=token).values_list(
            "instance_id", flat=True).first()
        if instance_id is None:
            return None
    return unit_of_work(str(instance_id), command, lock_timeout=workflow_settings.LOCK_TIMEOUT,
                        missing_ok=True, skip_locked=skip_locked, then=then,
                        known_claims=known_claims)


@dataclass(frozen=True)
class Claimed:
    """A claimed attempt: the work to run, and when it was claimed."""

    work: engine.Work
    at: float


def claim_attempt(token: str, worker: str = "") -> Claimed | None:
    """Claim a queued attempt; the work to run, or None when it is stale or taken.

    One fenced ``UPDATE`` of the attempt's row (queued -> running, with its
    heartbeat and its own timeout), committed at once; the instance is only
    read, after it, for the work to run.
    """
    meta, qn = Attempt._meta, connection.ops.quote_name
    with connection.cursor() as cursor:  # no queryset: its building would cost more than this
        cursor.execute(f"SELECT {_column(_field('instance'))}, "
                       f"{_column(_field('timeout'))} FROM {qn(meta.db_table)} "
                       f"WHERE {_column(meta.pk)} = %s", [token])
        found = cursor.fetchone()
    if found is None:
        return None  # its instance was deleted
    instance_id, timeout = found
    at = clock.now()
    claimed = _update_attempt(token, {
        "status": AttemptStatus.RUNNING, "claimed_at": to_datetime(at),
        "heartbeat_at": timezone.now(), "worker": worker, "live_status": "running",
        "timeout_at": to_datetime(at + timeout) if timeout else None,
    }, only_if=AttemptStatus.QUEUED)
    if not claimed:
        logger.info("Attempt %s was stopped or taken by another worker; not running it", token)
        return None
    work = _work_of(token, instance_id)
    if work is None:  # the instance moved on before the claim
        logger.info("Attempt %s is stale; not running it", token)
        Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING).update(
            status=AttemptStatus.DROPPED, finished_at=timezone.now(), live_status="")
        return None
    return Claimed(work, at)


def _work_of(token: str, instance_id: Any) -> engine.Work | None:
    """The work ``token`` names in its instance as saved (read without a lock)."""
    row = statements().row(instance_id)
    if row is None:
        return None
    definition = definition_of(row.workflow)
    snapshot = engine.load(definition, row.engine_data(), nested=row.parent_id is not None)
    return engine.find_work({snapshot.id: definition}, snapshot, token)


def finish_attempt(token: str, result: engine.AttemptOutcome, *,
                   instance_id: Any = None, claimed_at: float | None = None) -> bool:
    """Record how an attempt ended; False when its token was stale (result dropped).

    The attempt's row gets the last progress and log lines. ``claimed_at``, from
    its worker, records the claim with it without asking the attempt's row.
    """
    def record(applied: Applied) -> None:
        values: dict[str, Any] = {"finished_at": timezone.now(), "live_status": ""}
        if result.progress is not None:
            values["progress"] = asdict(result.progress)
        if result.logs:
            values["logs"] = list(result.logs)
        if not applied.outcome.moved:
            values["status"] = AttemptStatus.DROPPED
        # Told to stop (cancel, timeout): whatever it returned was discarded.
        _update_attempt(token, values, finished_unless_stopped=applied.outcome.moved)

    applied = _report(token, instance_id, engine.AttemptFinished(token, result), then=record,
                      known_claims=None if claimed_at is None else {token: claimed_at})
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
