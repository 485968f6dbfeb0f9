"""What a step can wait for from the world outside: a signal, or a time.

``Step("await-payment", wait=Signal("payment-confirmed", correlate=..., timeout=3600))``
waits until the signal is delivered (``services.signal``, a webhook) or its timeout
passes; ``Step("reminder", wait=Timer(after=timedelta(days=3)))`` until the time comes.
The rules are in ``engine/rules/waits.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from .definition import Hook, Seconds, Wait, check_candidates, to_seconds
from .errors import DefinitionError
from .schema import FieldError, check_schema, validate_state

OnTimeout = Literal["fail", "continue"]
FanOut = Literal["all", "first"]


@dataclass(frozen=True, eq=False)
class Signal(Wait):
    """Wait for the signal ``name``, sent by another system (a webhook) or a person.

    ``correlate(ctx)``: the value that addresses it from outside (a payment intent's
    id), computed once when the step is entered; a signal sent with that correlation
    reaches every instance waiting for it. ``schema``: a JSON Schema or a pydantic model
    the payload must satisfy. ``into``: the state's key the payload goes to (default: the
    signal's name); only the signal writes it. ``timeout``: how long to wait;
    ``on_timeout="fail"`` fails the step (``retry`` waits again), ``"continue"``
    stores None under ``into`` and follows the transitions. ``senders``: who may send it
    besides users with the change permission (``"user:"``, ``"group:"``, ``"perm:"``).
    ``fan_out``: a signal by correlation reaches ``"all"`` the instances waiting for it
    when it is handed over, or only the ``"first"`` (the oldest) of them; delivered now or
    kept for a step that will wait, the same.
    """

    name: str
    correlate: Hook | None = field(default=None, kw_only=True)
    schema: Any = field(default=None, kw_only=True)
    into: str | None = field(default=None, kw_only=True)
    timeout: Seconds | None = field(default=None, kw_only=True)
    on_timeout: OnTimeout = field(default="fail", kw_only=True)
    senders: Sequence[str] = field(default=(), kw_only=True)
    fan_out: FanOut = field(default="all", kw_only=True)
    kind: str = field(default="signal", init=False)

    def check(self, what: str) -> None:
        what = f"{what}: signal"
        if not isinstance(self.name, str) or not self.name:
            raise DefinitionError(f"{what} name must be a non-empty string, not {self.name!r}")
        what = f'{what} "{self.name}"'
        if self.correlate is not None and not callable(self.correlate):
            raise DefinitionError(f"{what}: correlate must be callable, not "
                                  f"{self.correlate!r}", "not_callable")
        if self.into is not None and (not isinstance(self.into, str) or not self.into):
            raise DefinitionError(f"{what}: into must be a non-empty string, not "
                                  f"{self.into!r}")
        if self.on_timeout not in ("fail", "continue"):
            raise DefinitionError(f'{what}: on_timeout must be "fail" or "continue", not '
                                  f"{self.on_timeout!r}")
        if self.fan_out not in ("all", "first"):
            raise DefinitionError(f'{what}: fan_out must be "all" or "first", not '
                                  f"{self.fan_out!r}")
        if self.schema is not None:
            check_schema(self.schema, what, name="schema")
        set_ = object.__setattr__
        set_(self, "timeout", to_seconds(self.timeout, what=f"{what}: timeout"))
        set_(self, "senders", check_candidates(self.senders, f"{what}: senders"))

    @property
    def key(self) -> str:
        """The state's key its payload goes to."""
        return self.into or self.name

    def payload_problems(self, payload: Any) -> list[FieldError]:
        """What is wrong with ``payload`` by the signal's schema (nothing without one)."""
        return list(validate_state(self.schema, payload)) if self.schema is not None else []


@dataclass(frozen=True, eq=False)
class Timer(Wait):
    """Wait for a time: ``after`` seconds (or a timedelta) from entering the step, or
    ``until(ctx)``, a timezone-aware datetime (or seconds since the epoch) the hook
    returns when the step is entered. Then the step moves on by itself, validated as an
    auto step is."""

    after: Seconds | None = None
    until: Callable[..., datetime | float] | None = field(default=None, kw_only=True)
    kind: str = field(default="timer", init=False)

    def check(self, what: str) -> None:
        what = f"{what}: timer"
        if (self.after is None) == (self.until is None):
            raise DefinitionError(f"{what} needs after (seconds or a timedelta) or until (a "
                                  "hook returning a datetime), and only one of them",
                                  "timer_without_time")
        if self.until is not None and not callable(self.until):
            raise DefinitionError(f"{what}: until must be callable, not {self.until!r}",
                                  "not_callable")
        object.__setattr__(self, "after", to_seconds(self.after, what=f"{what}: after"))
