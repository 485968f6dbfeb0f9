"""How a running operation is shown to people: its feedback phase.

``none`` for a finished operation and for the first moments of a running one,
then ``activity``; once a second has passed, ``determinate`` (with a percent)
when its progress has a total, otherwise ``indeterminate`` and, past ten
seconds, ``status`` (its progress message only, no animation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .bounds import FEEDBACK_ACTIVITY_AFTER, FEEDBACK_LOADING_AFTER, FEEDBACK_STALLED_AFTER
from .snapshot import OperationSnapshot

Phase = Literal["none", "activity", "determinate", "indeterminate", "status"]


@dataclass(frozen=True)
class Feedback:
    phase: Phase
    percent: int | None = None  # determinate only: 0 to 100
    message: str | None = None  # the progress message, from indeterminate on


NONE = Feedback("none")


def feedback(operation: OperationSnapshot, now: float) -> Feedback:
    """The phase of ``operation`` at ``now`` (epoch seconds)."""
    if not operation.in_flight:
        return NONE
    started = operation.started_at
    elapsed = (operation.completed_at or now) - started if started is not None else 0.0
    if elapsed < FEEDBACK_ACTIVITY_AFTER:
        return NONE
    if elapsed < FEEDBACK_LOADING_AFTER:
        return Feedback("activity")
    progress = operation.progress
    message = progress.message if progress is not None else None
    if progress is not None and progress.total and progress.total > 0:
        share = min(max(progress.current / progress.total, 0.0), 1.0)
        return Feedback("determinate", round(share * 100), message)
    if elapsed < FEEDBACK_STALLED_AFTER:
        return Feedback("indeterminate", message=message)
    return Feedback("status", message=message)
