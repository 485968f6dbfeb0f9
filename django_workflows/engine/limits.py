"""The engine's limits, each in one place."""

from __future__ import annotations

# A command that moves through more steps than this is caught in a cycle.
MAX_MOVES = 1000
# Log lines an operation keeps, the newest (``Operation(max_logs=...)`` changes it).
MAX_LOGS = 1000
# A running attempt reports its log lines at least every this many lines.
FLUSH_LINES = 50
