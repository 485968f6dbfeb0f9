"""Reading instances as people see them (the API and the admin share these)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .graph import marks_for
from .models import Attempt, AttemptStatus, WorkflowInstance

# What a running attempt reports on its own row until it ends, by fencing token.
LiveAttempts = Mapping[str, Mapping[str, Any]]


def _running_tokens(instance: WorkflowInstance) -> list[str]:
    return [op["token"] for op in instance.operations
            if op.get("token") and op.get("status") in ("running", "retrying")]


def live_attempts(instances: Iterable[WorkflowInstance]) -> dict[str, dict[str, Any]]:
    """What the running attempts of these instances reported so far, in one query."""
    tokens = [token for instance in instances for token in _running_tokens(instance)]
    if not tokens:
        return {}
    return {row["token"]: row for row in Attempt.objects.filter(
        token__in=tokens, status=AttemptStatus.RUNNING).values(
        "token", "progress", "logs", "live_status", "heartbeat_at")}


def live_operations(instance: WorkflowInstance, attempts: LiveAttempts | None = None
                    ) -> list[dict[str, Any]]:
    """The instance's operations, with what running attempts reported so far.

    Progress and log lines of a running operation are written to its attempt
    row (not the instance row) until the attempt ends; this merges them in.
    ``attempts`` (from :func:`live_attempts`) saves the query for a page of instances.
    """
    operations = instance.operations
    if attempts is None:
        attempts = live_attempts([instance])
    if not attempts:
        return operations
    merged = []
    for op in operations:
        row = attempts.get(op.get("token") or "")
        if row is not None:
            op = {**op, "progress": row["progress"] or op.get("progress"),
                  "logs": [*op.get("logs", []), *row["logs"]][-1000:],
                  "status": "waiting" if row["live_status"] == "waiting" else op["status"],
                  "heartbeat_at": row["heartbeat_at"].isoformat() if row["heartbeat_at"]
                  else None}
        merged.append(op)
    return merged


def marks_of(instance: WorkflowInstance) -> dict[str, str]:
    """Where the instance stands, as its diagram marks the steps."""
    return marks_for(status=instance.status, current_step=instance.current_step,
                     completed_steps=instance.completed_steps,
                     skipped_steps=instance.skipped_steps)
