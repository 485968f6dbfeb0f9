"""Commands the engine applies, and the outcome of a background attempt."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .errors import OperationBlockedError
from .snapshot import ErrorInfo, OperationSnapshot, Progress


@dataclass(frozen=True)
class Command:
    name: ClassVar[str]


@dataclass(frozen=True)
class Start(Command):
    name = "start"


@dataclass(frozen=True)
class Next(Command):
    name = "next"


@dataclass(frozen=True)
class Back(Command):
    name = "back"


@dataclass(frozen=True)
class Skip(Command):
    name = "skip"


@dataclass(frozen=True)
class Validate(Command):
    name = "validate"


@dataclass(frozen=True)
class Retry(Command):
    name = "retry"


@dataclass(frozen=True)
class Cancel(Command):
    name = "cancel"


@dataclass(frozen=True)
class Rollback(Command):
    name = "rollback"


@dataclass(frozen=True)
class UpdateState(Command):
    """Replace the state with ``value``, or with ``value(current_state)`` if callable."""

    name = "update_state"
    value: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class AttemptOutcome:
    """What a worker reports when an attempt ends."""

    ok: bool
    value: Any = None
    error: ErrorInfo | None = None
    children: tuple[OperationSnapshot, ...] = ()
    logs: tuple[str, ...] = ()
    progress: Progress | None = None

    @property
    def blocked(self) -> bool:
        return self.error is not None and self.error.name == OperationBlockedError.__name__


@dataclass(frozen=True)
class AttemptStarted(Command):
    """A worker claims an attempt; refused when its token is no longer current."""

    name = "attempt_started"
    token: str


@dataclass(frozen=True)
class AttemptFinished(Command):
    name = "attempt_finished"
    token: str
    outcome: AttemptOutcome = field(default_factory=lambda: AttemptOutcome(ok=True))


@dataclass(frozen=True)
class AttemptInterrupted(Command):
    """The worker of an attempt stopped sending heartbeats."""

    name = "attempt_interrupted"
    token: str


DeadlineKind = Literal["step-timeout", "attempt-timeout", "retry"]


@dataclass(frozen=True)
class DeadlineDue(Command):
    name = "deadline_due"
    kind: DeadlineKind
    token: str


COMMANDS: dict[str, type[Command]] = {
    cls.name: cls for cls in (Start, Next, Back, Skip, Validate, Retry, Cancel, Rollback)
}
