"""The time the service layer reads: deadlines are set and fired by it.

``django_workflows.testing.FakeClock`` replaces it in tests, so a test can
jump over a step timeout instead of waiting for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import overload

_source: Callable[[], float] = time.time


def now() -> float:
    """Seconds since the epoch."""
    return _source()


def now_datetime() -> datetime:
    return datetime.fromtimestamp(_source(), tz=UTC)


def use(source: Callable[[], float] | None) -> None:
    """Read the time from ``source`` (None: the real clock again)."""
    global _source
    _source = source or time.time


@overload
def to_datetime(value: float) -> datetime: ...


@overload
def to_datetime(value: float | None) -> datetime | None: ...


def to_datetime(value: float | None) -> datetime | None:
    """An engine time (seconds since the epoch) as the rows keep it."""
    return datetime.fromtimestamp(value, tz=UTC) if value is not None else None
