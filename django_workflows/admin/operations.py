"""What the operations panel says of an operation now, in words.

The engine's status names what the operation does (``retrying``: an attempt after the
first runs); the panel says it as people read it: *running* with the attempt's number
beside it, *waiting to retry* with when, and what an attempt held back by its ``Limit``
or ``Rate`` waits for (the engine says *queued*: only the attempt's row knows it waits).
The last error is shown only while it is what the operation's state is about (it failed,
is blocked, or waits to try again) and says which attempt it came from; a new attempt
that runs has no error yet. Progress is shown with its total and the operation's unit
(``Operation(metadata={"unit": "rows"})``), and a count that says nothing (0, with no
total) is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from .. import engine
from .instance_waiting import when

# The engine's status -> (the words shown, the badge's colour class).
SHOWN = {"retrying": ("running", "running"), "idle": ("not started", "idle")}


def status_words(op: engine.OperationSnapshot, waiting_for: str = "") -> tuple[str, str]:
    """The badge of ``op``: its words and its colour class. ``waiting_for``: what its
    attempt waits for (``services.slots.waiting_for``), when it waits for a slot."""
    if waiting_for:
        return waiting_for, "waiting"
    if op.status == "queued" and op.attempt > 1:
        return "queued to retry", "queued"
    if op.status == "waiting":
        return ("waiting to retry", "waiting") if op.retry_at is not None else (
            "waiting", "waiting")
    return SHOWN.get(op.status, (op.status, op.status))


def error_now(op: engine.OperationSnapshot) -> str:
    """The operation's last error, when it belongs to what the operation does now:
    ``attempt 1 failed: RuntimeError: feed unavailable (503)``, with when the next attempt
    is due while it waits for one; nothing while an attempt runs or once it succeeded."""
    error = op.error
    if error is None or op.status in ("running", "retrying", "succeeded", "idle", "skipped"):
        return ""
    message = f"{error.name}: {error.message}"
    if op.status == "blocked":
        return f"attempt {op.attempt} is blocked: {error.message}"
    if op.status == "cancelled":
        return f"stopped: {error.message}"
    if op.status == "queued":  # a retry queued: the error is the attempt before's
        return f"attempt {op.attempt - 1} failed: {message}" if op.attempt > 1 else ""
    if op.status == "waiting" and op.retry_at is not None:
        at = when(datetime.fromtimestamp(op.retry_at, tz=UTC))
        return f"attempt {op.attempt} failed: {message}; attempt {op.attempt + 1} at {at}"
    if op.status == "waiting":
        return f"attempt {op.attempt} failed: {message}; the next starts once it stopped"
    return f"attempt {op.attempt} failed: {message}"


def _number(value: float) -> str:
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def progress_words(op: engine.OperationSnapshot, unit: str | None = None) -> str:
    """``6 / 20 rows · tick 6``; ``Confirmed`` for a bare message (no ``0 ·`` before it)."""
    progress = op.progress
    if progress is None:
        return ""
    unit = f" {unit}" if unit else ""
    count = ""
    if progress.total:
        count = f"{_number(progress.current)} / {_number(progress.total)}{unit}"
    elif progress.current:
        count = f"{_number(progress.current)}{unit}"
    return " · ".join(part for part in (count, progress.message or "") if part)


def unit_of(metadata: object) -> str | None:
    """The unit an operation counts its progress in: ``metadata["unit"]``, if it says."""
    unit = metadata.get("unit") if isinstance(metadata, Mapping) else None
    return str(unit) if unit else None
