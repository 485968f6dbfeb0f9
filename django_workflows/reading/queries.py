"""Reading instances as people see them (the API and the admin share these)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .. import engine, registry
from ..engine.bounds import MAX_LOGS
from ..engine.schema import json_schema_of
from ..graph import marks_for
from ..models import Attempt, AttemptStatus, WorkflowInstance, WorkflowTask
from ..services.slots import waiting_for

# What a running attempt reports on its own row until it ends, and what a waiting one
# waits for (``waiting_for``), by fencing token.
LiveAttempts = Mapping[str, Mapping[str, Any]]
# What an attempt's limits are read from, on its row.
LIMITS = ("limit_key", "limit_max", "rate_key", "rate_limit", "rate_per")


@dataclass(frozen=True)
class LiveOperation:
    """An operation as the snapshot holds it, with what its running attempt reported since."""

    operation: engine.OperationSnapshot
    heartbeat_at: datetime | None = None
    waiting_for: str = ""  # its attempt waits for a slot: what for (services/slots.py)


def _running_tokens(instance: WorkflowInstance) -> list[str]:
    # The unclaimed ones too: a worker's claim is on the attempt's row until the instance
    # next changes (services/attempt_claims.py).
    return [*(op.token for op in instance.snap.operations
              if op.token and op.status in ("running", "retrying")),
            *(token for node, token in engine.unclaimed_tokens(instance.snap)
              if node == instance.snap.id)]


def live_attempts(instances: Iterable[WorkflowInstance]) -> dict[str, Mapping[str, Any]]:
    """What the running attempts of these instances reported so far, and what the waiting
    ones wait for, in one query (and one count per limit that some of them wait for)."""
    tokens = [token for instance in instances for token in _running_tokens(instance)]
    if not tokens:
        return {}
    rows = {row["token"]: row for row in Attempt.objects.filter(
        token__in=tokens, status__in=(AttemptStatus.RUNNING, AttemptStatus.REPORTED,
                                      AttemptStatus.WAITING)).values(
        "token", "status", "progress", "logs", "live_status", "heartbeat_at", "claimed_at",
        *LIMITS)}
    said: dict[tuple[Any, ...], str] = {}  # one count per limit, however many wait for it
    for row in rows.values():
        if row["status"] == AttemptStatus.WAITING:
            limits = {name: row[name] for name in LIMITS}
            key = tuple(limits.values())
            if key not in said:
                said[key] = waiting_for(Attempt(status=AttemptStatus.WAITING, **limits))
            row["waiting_for"] = said[key]
    return rows


def live_operations(instance: WorkflowInstance, attempts: LiveAttempts | None = None
                    ) -> list[LiveOperation]:
    """The instance's operations, with what running attempts reported so far and what
    waiting ones wait for.

    Progress and log lines of a running operation are written to its attempt
    row (not the instance row) until the attempt ends; this merges them in.
    ``attempts`` (from :func:`live_attempts`) saves the query for a page of instances.
    """
    operations = instance.snap.operations
    if attempts is None:
        attempts = live_attempts([instance])
    if not attempts:
        return [LiveOperation(op) for op in operations]
    definition = registry.find(instance.workflow)
    shown = []
    for op in operations:
        row = attempts.get(op.token or "")
        if row is None or row["status"] == AttemptStatus.WAITING:  # nothing reported yet
            shown.append(LiveOperation(op, waiting_for=row["waiting_for"] if row else ""))
            continue
        found = definition.find_operation(op.id) if definition is not None else None
        keep = found.max_logs if found is not None else MAX_LOGS
        progress = engine.Progress(**row["progress"]) if row["progress"] else op.progress
        status = op.status
        if status == "queued":  # claimed: running, as the instance records with its next change
            status = "running" if op.attempt == 1 else "retrying"
            op = replace(op, started_at=op.started_at or row["claimed_at"].timestamp())
        shown.append(LiveOperation(replace(
            op, progress=progress, logs=(*op.logs, *row["logs"])[-keep:] if keep else (),
            status="waiting" if row["live_status"] == "waiting" else status),
            heartbeat_at=row["heartbeat_at"]))
    return shown


def marks_of(instance: WorkflowInstance) -> dict[str, str]:
    """Where the instance stands, as its diagram marks the steps.

    A step left behind by ``back`` or ``rewind`` (a completed instance reopened) is no longer
    reached: it keeps no mark, though the rules keep it among the completed steps.
    """
    snap = instance.snap
    history = set(snap.history)
    marks = marks_for(status=snap.status, current_step=snap.current_step or "",
                      completed_steps=[s for s in snap.completed_steps if s in history],
                      skipped_steps=snap.skipped_steps)
    waiting = snap.waiting
    if waiting is not None and waiting.arrived is None and marks.get(waiting.step) == "current":
        marks[waiting.step] = "waiting"  # a signal or a timer: the outside moves it on
    return marks


def form_of(task: WorkflowTask) -> dict[str, Any] | None:
    """The JSON Schema a task's input must satisfy, from its step's definition (or as the
    operation's durable code asked it)."""
    if task.asked is not None:
        form = task.asked.get("form")
        return dict(form) if isinstance(form, dict) else None
    definition = registry.find(task.workflow)
    step = definition.steps_by_id.get(task.step) if definition is not None else None
    return json_schema_of(step.task.form) if step is not None and step.task else None
