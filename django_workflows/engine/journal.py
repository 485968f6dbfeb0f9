"""Durable code: the journal of an operation's steps and waits (``docs/durable-code.md``).

An operation's code calls ``ctx.step(name, fn)``; the first run of each step
records its result in the operation's journal, and every later run of the code
(a retry, a recovery after a crash, a resume after a wait) takes that result
instead of calling ``fn`` again. The journal is read once per attempt and
written once per step, by the worker, outside the instance's lock: a step is a
fact about the world (a charge was made), whatever the attempt's fate.

A wait (``ctx.sleep``, ``ctx.sleep_until``, ``ctx.wait_for_signal``,
``ctx.ask``) in a durable operation raises :class:`Suspend`: the attempt ends
with a :class:`Suspension`, the worker is free, and the engine waits as a step
waits (a deadline, a signal, a task). What ends the wait is handed back to the
next attempt as the operation's ``woken`` (its position and value), and the
replay records it in the journal when it reaches that position: a wait is in
the journal once it ended.

Replay is by position: the n-th call of the code must ask for the n-th entry
by the same name and kind, or the attempt fails with :class:`ReplayMismatch`,
which no retry can mend.

Nothing here imports Django; the worker gives a :class:`JournalStore`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .errors import WorkflowError

EntryKind = Literal["step", "sleep", "signal", "task", "patch"]


@dataclass(frozen=True)
class JournalEntry:
    """One step or wait of an operation's code, at its ``position`` (0, 1, ...)."""

    position: int
    name: str
    kind: EntryKind = "step"
    # A step's result (JSON); a wait's {"value": the signal's payload or the task's
    # decision, "timed_out": whether its timeout passed first}.
    value: Any = None
    tries: int = 1  # calls of a step's function it took
    started_at: float | None = None
    finished_at: float | None = None


class JournalStore(Protocol):
    """Where an operation's journal lives (the database, in a worker; memory in tests).

    ``key`` names one run of an operation (kept across its attempts; a step entered
    again starts a new one)."""

    def entries(self, key: str) -> Sequence[JournalEntry]:
        """The entries recorded under ``key``, by position."""
        ...

    def record(self, key: str, entry: JournalEntry) -> JournalEntry:
        """Record ``entry``; the entry kept at its position (another attempt's, when one
        recorded it first: the first record wins)."""
        ...


class MemoryJournal:
    """A :class:`JournalStore` in a dict: for code run in-process, and tests."""

    def __init__(self) -> None:
        self.kept: dict[str, dict[int, JournalEntry]] = {}

    def entries(self, key: str) -> Sequence[JournalEntry]:
        return [entry for _, entry in sorted(self.kept.get(key, {}).items())]

    def record(self, key: str, entry: JournalEntry) -> JournalEntry:
        return self.kept.setdefault(key, {}).setdefault(entry.position, entry)


@dataclass(frozen=True)
class Suspension:
    """What an operation's code waits for, once its attempt ended to wait.

    ``kind``: ``"timer"`` (until ``until``, seconds since the epoch), ``"signal"``
    (the operation's declared signal ``name``; ``until``: its timeout, if any) or
    ``"task"`` (``task``: the task to open, as JSON: its title, form's JSON Schema,
    candidates, ...). ``position``: the journal's entry that waits.
    """

    kind: Literal["timer", "signal", "task"]
    position: int
    name: str
    until: float | None = None
    task: Mapping[str, Any] | None = field(default=None)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Suspension:
        return cls(kind=data["kind"], position=int(data["position"]), name=str(data["name"]),
                   until=data.get("until"), task=data.get("task"))


class Suspend(BaseException):
    """Raised inside an operation's code to end its attempt and wait (``suspension``).

    A ``BaseException``, as ``KeyboardInterrupt`` is, so that ``except Exception`` in the
    user's code lets it through."""

    def __init__(self, suspension: Suspension) -> None:
        super().__init__(f"waits ({suspension.kind} {suspension.name!r})")
        self.suspension = suspension


class ReplayMismatch(WorkflowError):
    """A replay asked for another step than the journal holds at that position."""


class WaitTimedOut(WorkflowError):
    """``ctx.wait_for_signal(name, timeout=...)``: the timeout passed before the signal."""


def mismatch(position: int, asked: str, asked_kind: str, held: JournalEntry) -> ReplayMismatch:
    """The error of a replay that asked for ``asked`` where the journal holds ``held``."""
    return ReplayMismatch(
        f'The replay asked for {asked_kind} "{asked}" at position {position}, but the journal '
        f'holds {held.kind} "{held.name}" there: the code changed the order of its steps '
        "(docs/durable-code.md: changing durable code)")


__all__ = [
    "JournalEntry", "JournalStore", "MemoryJournal", "ReplayMismatch", "Suspend",
    "Suspension", "WaitTimedOut",
]
