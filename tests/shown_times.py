"""How the admin shows a deadline, written out independently of the code that shows it, for
tests that run on the real clock: the time alone on the day it is read, with its date on
another day (a test run near midnight reads tomorrow's deadline)."""

from __future__ import annotations

from datetime import UTC, datetime


def deadline_as_shown(deadline: datetime, *read_at: datetime) -> set[str]:
    """The texts a page read at any of ``read_at`` may show for ``deadline``, in UTC."""
    deadline = deadline.astimezone(UTC)
    return {f"{deadline:%H:%M} UTC" if deadline.date() == moment.astimezone(UTC).date()
            else f"{deadline.day} {deadline:%b %Y %H:%M} UTC" for moment in read_at}
