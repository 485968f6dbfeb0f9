"""Limits per key on background work: ``Limit`` (how many run at once) and ``Rate`` (how
many start per window), declared on an ``Operation`` or a ``Branch``.

The engine computes an attempt's keys when it hands the attempt out (``slot_of``) and
puts them on its ``RunAttempt``; the service keeps them on the attempt's row and holds
the attempt back until a slot is free (``services/slots.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .errors import DefinitionError, HookFailed

if TYPE_CHECKING:
    from .change import Change

KeyOf = str | Callable[..., Any]
MAX_KEY_LENGTH = 200  # the attempt row's column


@dataclass(frozen=True)
class Limit:
    """At most ``max`` attempts with the same key run at once, across every worker.

    ``key`` is a string (one pool for the operation) or ``key(ctx)``, called with the
    hook context when the attempt is handed out (``lambda ctx: ctx.state["merchant"]``).
    Work of other operations that gives the same key shares its slots.
    """

    key: KeyOf
    max: int


@dataclass(frozen=True)
class Rate:
    """At most ``limit`` attempts with the same key start in any ``per`` seconds."""

    key: KeyOf
    limit: int
    per: float | int | timedelta


@dataclass(frozen=True)
class Slot:
    """An attempt's keys as computed at hand-out, with the numbers they are held to."""

    limit_key: str = ""
    max: int = 0
    rate_key: str = ""
    rate_limit: int = 0
    per: float = 0.0


def _count(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DefinitionError(f"{what} must be an int >= 1, not {value!r}", "bad_limit")


def _key(value: Any, what: str) -> None:
    if isinstance(value, str) and value and len(value) <= MAX_KEY_LENGTH:
        return
    if not isinstance(value, str) and callable(value):
        return
    raise DefinitionError(f"{what}: key must be a non-empty string of at most "
                          f"{MAX_KEY_LENGTH} characters or a callable, not {value!r}",
                          "bad_limit")


def check_limits(concurrency: Any, rate: Any, what: str) -> None:
    """``concurrency`` and ``rate`` of an operation or a branch (``what`` names it), or raise
    a ``DefinitionError`` that names it (system check E008)."""
    if concurrency is not None:
        if not isinstance(concurrency, Limit):
            raise DefinitionError(f"{what}: concurrency must be a Limit, not {concurrency!r}",
                                  "bad_limit")
        _key(concurrency.key, f"{what}: concurrency")
        _count(concurrency.max, f"{what}: concurrency max")
    if rate is not None:
        if not isinstance(rate, Rate):
            raise DefinitionError(f"{what}: rate must be a Rate, not {rate!r}", "bad_limit")
        _key(rate.key, f"{what}: rate")
        _count(rate.limit, f"{what}: rate limit")
        per = rate.per.total_seconds() if isinstance(rate.per, timedelta) else rate.per
        if isinstance(per, bool) or not isinstance(per, int | float) or not per > 0:
            raise DefinitionError(f"{what}: rate per must be a positive number of seconds or "
                                  f"a timedelta, not {rate.per!r}", "bad_limit")


def seconds_of(rate: Rate) -> float:
    return float(rate.per.total_seconds() if isinstance(rate.per, timedelta) else rate.per)


def _key_of(c: Change, key: KeyOf, step: str, what: str) -> str:
    if isinstance(key, str):
        return key
    found = c.run_hook(key, c.context(step), step=step, what=what)
    if isinstance(found, int) and not isinstance(found, bool):
        found = str(found)  # a merchant's id
    if not isinstance(found, str) or not found or len(found) > MAX_KEY_LENGTH:
        message = (f"{what} must return a non-empty string of at most {MAX_KEY_LENGTH} "
                   f"characters, not {found!r}")
        c.fail(message, step)
        raise HookFailed(message)
    return found


def slot_of(c: Change, concurrency: Limit | None, rate: Rate | None, step: str,
            what: str) -> Slot | None:
    """The keys of an attempt handed out now (None: it has no limit). A key function that
    raises or returns something else than a string fails the workflow, as a hook does."""
    if concurrency is None and rate is None:
        return None
    slot = Slot()
    if concurrency is not None:
        slot = Slot(limit_key=_key_of(c, concurrency.key, step, f"The concurrency key of {what}"),
                    max=concurrency.max)
    if rate is not None:
        slot = Slot(slot.limit_key, slot.max,
                    _key_of(c, rate.key, step, f"The rate key of {what}"),
                    rate.limit, seconds_of(rate))
    return slot
