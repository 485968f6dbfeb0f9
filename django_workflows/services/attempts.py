"""The worker's side of the service: claim an attempt, beat, report how it ended,
and fire what fell due (deadlines, expired heartbeats). Each is one short
unit of work under the instance's row lock; user code never runs inside one.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from django.db import connection
from django.utils import timezone

from .. import engine
from ..conf import workflow_settings
from ..models import Attempt, AttemptStatus, Deadline
from .persistence import definition_of
from .unit import Applied, unit_of_work

logger = logging.getLogger("django_workflows")


def _update_attempt(token: str, values: dict[str, Any], *,
                    finished_unless_stopped: bool = False) -> None:
    """``UPDATE`` one attempt's row as ``filter(token=...).update(...)`` would, without
    building the query each time (the ORM's query building was a fifth of a worker's CPU).

    With ``finished_unless_stopped``, its status becomes finished, or dropped if it
    was told to stop.
    """
    meta, qn = Attempt._meta, connection.ops.quote_name
    fields = [meta.get_field(name) for name in values]
    params = [field.get_db_prep_save(values[field.name], connection) for field in fields]
    assignments = ", ".join(f"{qn(field.column)} = %s" for field in fields)
    status = (f", {qn(meta.get_field('status').column)} = CASE WHEN "
              f"{qn(meta.get_field('stop_reason').column)} = %s THEN %s ELSE %s END"
              if finished_unless_stopped else "")
    if finished_unless_stopped:
        params += ["", AttemptStatus.FINISHED.value, AttemptStatus.DROPPED.value]
    sql = f"UPDATE {qn(meta.db_table)} SET {assignments}{status} WHERE {qn(meta.pk.column)} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, token])


def _instance_of(token: str, instance_id: Any) -> str | None:
    """The id of the instance an attempt belongs to (given, or read from its row)."""
    if instance_id is None:
        instance_id = Attempt.objects.filter(token=token).values_list(
            "instance_id", flat=True).first()
    return None if instance_id is None else str(instance_id)


def _report(token: str, instance_id: Any, command: engine.Command, *,
            skip_locked: bool = False, then: Any = None) -> Applied | None:
    found = _instance_of(token, instance_id)
    if found is None:
        return None
    return unit_of_work(found, command, lock_timeout=workflow_settings.LOCK_TIMEOUT,
                        missing_ok=True, skip_locked=skip_locked, then=then)


def claim_attempt(token: str, worker: str = "", *, instance_id: Any = None
                  ) -> engine.Work | None:
    """Claim a queued attempt; the work to run, or None when it is stale or taken.

    Given its ``instance_id`` (as the runner does), it goes straight to the
    instance's lock, where the engine refuses a stale or taken token anyway.
    """
    def record(applied: Applied) -> None:
        if applied.outcome.moved:
            now = timezone.now()
            _update_attempt(token, {"status": AttemptStatus.RUNNING, "claimed_at": now,
                                    "heartbeat_at": now, "worker": worker,
                                    "live_status": "running"})
        else:  # only if still queued: another worker may have claimed it meanwhile
            Attempt.objects.filter(token=token, status=AttemptStatus.QUEUED).update(
                status=AttemptStatus.DROPPED, finished_at=timezone.now())

    applied = _report(token, instance_id, engine.AttemptStarted(token), then=record)
    if applied is None:
        return None
    if not applied.outcome.moved:
        logger.info("Attempt %s is stale (%s); not running it", token, applied.outcome.message)
        return None
    # Pure Python on the saved snapshot: after commit, not under the lock.
    snapshot = applied.outcome.snapshot
    definitions = engine.definitions_of(applied.definition, snapshot, definition_of)
    return engine.find_work(definitions, snapshot, token)


def finish_attempt(token: str, result: engine.AttemptOutcome, *,
                   instance_id: Any = None) -> bool:
    """Record how an attempt ended; False when its token was stale (result dropped).

    The attempt's row gets the last progress and log lines.
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

    applied = _report(token, instance_id, engine.AttemptFinished(token, result), then=record)
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
