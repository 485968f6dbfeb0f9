"""Reading instances as people see them (the API and the admin share these)."""

from __future__ import annotations

from typing import Any

from .models import Attempt, AttemptStatus, WorkflowInstance


def live_operations(instance: WorkflowInstance) -> list[dict[str, Any]]:
    """The instance's operations, with what running attempts reported so far.

    Progress and log lines of a running operation are written to its attempt
    row (not the instance row) until the attempt ends; this merges them in.
    """
    operations = instance.operations
    tokens = [op["token"] for op in operations
              if op.get("token") and op.get("status") in ("running", "retrying")]
    if not tokens:
        return operations
    live = {row["token"]: row for row in Attempt.objects.filter(
        token__in=tokens, status=AttemptStatus.RUNNING).values(
        "token", "progress", "logs", "live_status", "heartbeat_at")}
    merged = []
    for op in operations:
        row = live.get(op.get("token") or "")
        if row is not None:
            op = {**op, "progress": row["progress"] or op.get("progress"),
                  "logs": [*op.get("logs", []), *row["logs"]][-1000:],
                  "status": "waiting" if row["live_status"] == "waiting" else op["status"],
                  "heartbeat_at": row["heartbeat_at"].isoformat() if row["heartbeat_at"]
                  else None}
        merged.append(op)
    return merged
