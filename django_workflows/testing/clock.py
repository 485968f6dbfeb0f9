"""A clock for tests: it moves only when told to."""

from __future__ import annotations

from datetime import UTC, datetime


class FakeClock:
    """Time that stands still until moved (``sleep`` moves it too).

    ``start`` is epoch seconds or an aware datetime; by default 2030-01-01 UTC.
    """

    def __init__(self, start: float | datetime | None = None) -> None:
        if isinstance(start, datetime):
            start = start.timestamp()
        self.time = float(start if start is not None
                          else datetime(2030, 1, 1, tzinfo=UTC).timestamp())

    def now(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)
