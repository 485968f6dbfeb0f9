"""The engine's limits, each in one place."""

from __future__ import annotations

# A command that moves through more steps than this is caught in a cycle.
MAX_MOVES = 1000
# Log lines an operation keeps, the newest (``Operation(max_logs=...)`` changes it).
MAX_LOGS = 1000
# A running attempt reports its log lines at least every this many lines.
FLUSH_LINES = 50
# How an operation's progress is shown (engine/feedback.py), in seconds since it started:
# nothing at first, then a sign of activity, then the progress (or a message when stalled).
FEEDBACK_ACTIVITY_AFTER = 0.2
FEEDBACK_LOADING_AFTER = 1.0
FEEDBACK_STALLED_AFTER = 10.0
