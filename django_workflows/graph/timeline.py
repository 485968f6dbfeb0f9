"""An instance's history as lanes of bars in time: what the instance page's timeline draws.

Pure Python, from plain records (its events, and the attempt rows that say what a worker
claimed before the instance recorded it): each step's stay, each attempt of an operation
(queued, running, its outcome, the wait for a retry delay, a timeout and the stop after
it), the steps of its durable code (marks where each finished), parallel branches, tasks
from opened to decided, waits for signals and timers, pauses, a rollback's compensations
and a nested child's steps.
:func:`.timeline_events.timeline_of` reads them from events, :mod:`.timeline_svg` draws
them, and ``django_workflows.admin.timeline`` reads the rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Happening:
    """An event as the timeline reads it; ``at`` in epoch seconds."""

    type: str
    at: float
    step: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    actor: str | None = None


@dataclass(frozen=True)
class AttemptRow:
    """An attempt's own row: its times and worker (a claim the instance has not recorded
    yet is only here)."""

    kind: str
    target: str
    number: int
    status: str
    enqueued_at: float
    claimed_at: float | None = None
    finished_at: float | None = None
    worker: str = ""


@dataclass(frozen=True)
class JournalRow:
    """An entry of an operation's journal (durable code): a step, or a wait that ended."""

    operation: str
    position: int
    name: str
    kind: str  # step, sleep, signal, task, patch
    finished_at: float
    tries: int = 1


@dataclass(frozen=True)
class Bar:
    """A span of time in a lane. ``end`` None: it goes on (drawn to the timeline's end)."""

    start: float
    end: float | None
    outcome: str  # how it is coloured: completed, running, failed, retry-wait...
    label: str  # written in the bar when it fits
    detail: str = ""  # said on hover, after the times
    planned_end: float | None = None  # a timer's or a deadline's time, drawn faintly


@dataclass(frozen=True)
class Mark:
    """A moment in a lane: a timeout, an error, a signal's arrival, a claim."""

    at: float
    kind: str  # error, timeout, skip, claim, overdue, start, complete, cancel, retry...
    text: str


@dataclass
class Lane:
    key: str
    label: str
    kind: str  # steps, operation, branch, task, wait, rollback, child
    bars: list[Bar] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)


@dataclass(frozen=True)
class Timeline:
    lanes: tuple[Lane, ...]
    start: float
    end: float
    omitted: int = 0  # older events not read: the timeline starts at the first one read
    running: bool = False  # the end is now, and bars that go on are still going


@dataclass(frozen=True)
class Titles:
    """Names people know things by, from the definition (ids when it has none)."""

    steps: Mapping[str, str] = field(default_factory=dict)
    operations: Mapping[str, str] = field(default_factory=dict)
    tasks: Mapping[str, str] = field(default_factory=dict)  # step id -> its task's title

    def step(self, key: str) -> str:
        return self.steps.get(key) or key or "—"

    def operation(self, key: str) -> str:
        return self.operations.get(key) or key

    def task(self, step: str) -> str:
        return self.tasks.get(step) or self.step(step)


@dataclass(frozen=True)
class Child:
    """A nested child instance: its steps become one lane of the parent's timeline."""

    label: str
    events: Sequence[Happening]
    status: str = "running"


def span_words(seconds: float) -> str:
    """A duration as people say it: ``0.4 s``, ``3.1 s``, ``2 min 5 s``, ``3 h 4 min``,
    ``2 d 3 h``."""
    seconds = max(float(seconds), 0.0)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
