"""The worker's side of the service: claim an attempt, report how it ended,
and fire what fell due (deadlines, expired heartbeats). Each is one short
transaction under the instance's row lock; user code never runs inside one.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from .. import engine
from ..conf import workflow_settings
from ..engine.stepwork import MAX_LOGS
from ..exceptions import InstanceNotFound
from ..models import Attempt, AttemptStatus, Deadline, WorkflowInstance
from .commands import _after_commit, _env
from .locking import busy_as_error, lock_tree, root_id
from .persistence import definition_of, load_chain, save_outcome

logger = logging.getLogger("django_workflows")


def _apply(instance_id: Any, command: engine.Command, *, skip_locked: bool = False,
           still_due: int | None = None
           ) -> tuple[engine.Outcome, engine.Workflow] | None:
    """Apply an internal command under the lock.

    None when the instance was deleted meanwhile (its attempts and deadlines with
    it), when ``skip_locked`` found it busy, or when the deadline ``still_due`` was
    fired or cleared by someone else meanwhile.
    """
    try:
        if skip_locked:
            root = WorkflowInstance.objects.select_for_update(skip_locked=True).filter(
                pk=root_id(instance_id)).first()
            if root is None:
                return None
        chain = lock_tree(instance_id, timeout=workflow_settings.LOCK_TIMEOUT)
    except InstanceNotFound:
        return None
    # Deadline rows are locked after the instance, as commands do: never a deadlock.
    if still_due is not None and not Deadline.objects.filter(pk=still_due).exists():
        return None
    definition, tree = load_chain(chain)
    outcome = engine.apply(definition, tree, command, _env(None), target=str(instance_id))
    saved = save_outcome(chain, tree, outcome)
    _after_commit(saved)
    return outcome, definition


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


def claim_attempt(token: str, worker: str = "", *, instance_id: Any = None
                  ) -> engine.Work | None:
    """Claim a queued attempt; the work to run, or None when it is stale or taken.

    Given its ``instance_id`` (as the runner does), it goes straight to the
    instance's lock, where the engine refuses a stale or taken token anyway.
    """
    if instance_id is None:
        attempt = Attempt.objects.filter(token=token).only("instance_id", "status").first()
        if attempt is None or attempt.status != AttemptStatus.QUEUED:
            logger.info("Attempt %s is not queued (%s); not running it", token,
                        attempt.status if attempt else "unknown")
            return None
        instance_id = attempt.instance_id
    with busy_as_error(workflow_settings.LOCK_TIMEOUT), transaction.atomic():
        applied = _apply(instance_id, engine.AttemptStarted(token))
        if applied is None:
            return None
        outcome, definition = applied
        if not outcome.moved:
            # Only if still queued: another worker may have claimed it meanwhile.
            Attempt.objects.filter(token=token, status=AttemptStatus.QUEUED).update(
                status=AttemptStatus.DROPPED, finished_at=timezone.now())
            logger.info("Attempt %s is stale (%s); not running it", token, outcome.message)
            return None
        now = timezone.now()
        _update_attempt(token, {"status": AttemptStatus.RUNNING, "claimed_at": now,
                                "heartbeat_at": now, "worker": worker,
                                "live_status": "running"})
    # Pure Python on the saved snapshot: after commit, not under the lock.
    definitions = engine.definitions_of(definition, outcome.snapshot, definition_of)
    return engine.find_work(definitions, outcome.snapshot, token)


def finish_attempt(token: str, result: engine.AttemptOutcome, *,
                   instance_id: Any = None) -> bool:
    """Record how an attempt ended; False when its token was stale (result dropped).

    ``instance_id`` (the instance the attempt belongs to, as the claim found it)
    saves looking it up. The attempt's row gets the last progress and log lines.
    """
    if instance_id is None:
        attempt = Attempt.objects.filter(token=token).only("instance_id").first()
        if attempt is None:
            return False
        instance_id = attempt.instance_id
    with busy_as_error(workflow_settings.LOCK_TIMEOUT), transaction.atomic():
        applied = _apply(instance_id, engine.AttemptFinished(token, result))
        if applied is None:
            return False
        outcome = applied[0]
        values: dict[str, Any] = {"finished_at": timezone.now(), "live_status": ""}
        if result.progress is not None:
            values["progress"] = asdict(result.progress)
        if result.logs:
            values["logs"] = list(result.logs)[-MAX_LOGS:]
        if not outcome.moved:
            values["status"] = AttemptStatus.DROPPED
        # Told to stop (cancel, timeout): whatever it returned was discarded.
        _update_attempt(token, values, finished_unless_stopped=outcome.moved)
    if not outcome.moved:
        logger.warning("Dropped the stale result of attempt %s: %s", token, outcome.message)
    return outcome.moved


def interrupt_attempt(token: str, *, instance_id: Any = None) -> bool:
    """The attempt's worker died: apply the interruption rules.

    False when the instance is busy (the next sweep looks again) or the attempt
    was no longer the current one. ``instance_id`` (the attempt's instance, as the
    sweep found it) saves looking it up.
    """
    if instance_id is None:
        attempt = Attempt.objects.filter(token=token).only("instance_id").first()
        if attempt is None:
            return False
        instance_id = attempt.instance_id
    with busy_as_error(workflow_settings.LOCK_TIMEOUT), transaction.atomic():
        applied = _apply(instance_id, engine.AttemptInterrupted(token), skip_locked=True)
        if applied is None:
            return False  # busy, or deleted meanwhile
        # Only if still running: its result may have come in since the sweep looked.
        Attempt.objects.filter(token=token, status=AttemptStatus.RUNNING).update(
            status=AttemptStatus.INTERRUPTED, finished_at=timezone.now(), live_status="")
    return applied[0].moved


def fire_deadline(deadline: Deadline | int) -> bool:
    """Fire one due deadline (its row or id); False if a sweep or a command got there first."""
    if not isinstance(deadline, Deadline):
        found = Deadline.objects.filter(pk=deadline).first()
        if found is None:
            return False
        deadline = found
    with busy_as_error(workflow_settings.LOCK_TIMEOUT), transaction.atomic():
        applied = _apply(deadline.instance_id, engine.DeadlineDue(deadline.kind, deadline.token),
                         skip_locked=True, still_due=deadline.pk)
        if applied is None:
            return False  # busy, or already done: the next sweep looks again
        Deadline.objects.filter(pk=deadline.pk).delete()
        return applied[0].moved
