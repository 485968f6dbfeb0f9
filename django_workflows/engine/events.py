"""Every event an instance records, declared once with what it means.

An event's type is one of :data:`EventName`: ``Change.emit`` takes nothing else, so an
event no one declared is a type error (and fails at import when :data:`EVENTS` and the
names drift apart). :data:`EVENTS` says what each one means to those who read the log:

- ``stay``: how it touches a stay in a step. ``"enters"``: a stay in its step begins;
  ``"returns"``: the stay that was open ends and one in its step (gone back to) begins;
  ``"leaves"``: the stay in its own step ends (left, or skipped); ``"ends"``: the stay
  that was open ends with the instance's run. ``ends_as`` names how a stay it ends ended;
- ``failure``: it records a failure (the workflow page counts them by step);
- ``child_lane``: a nested child's lane on its parent's timeline shows it;
- ``by_person``: a person's command records it (not the machinery: a worker, the sweep).

The admin's timeline and workflow page, the index of the events table (``models.py``),
the docs' list of events and the API schema's enum all read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

EventName = Literal[
    "start", "resume", "step-enter", "step-leave", "validate", "skip", "back", "retry",
    "cancel", "rollback", "compensate", "complete", "error", "state-update",
    "operation-queued", "operation-started", "operation-progress", "operation-succeeded",
    "operation-failed", "operation-retrying", "operation-cancelled", "operation-blocked",
    "operation-skipped",
    "branch-started", "branch-succeeded", "branch-failed", "branch-cancelled",
    "compensation-started", "attempt-stopped",
    "task-open", "task-claim", "task-release", "task-complete", "task-overdue", "task-cancel",
    "signal-wait", "signal", "signal-timeout", "timer-wait", "timer-fire",
    "pause", "held", "rewind",
]
Stay = Literal["enters", "returns", "leaves", "ends"]


@dataclass(frozen=True)
class Meaning:
    """What one event type means to the readers of the log."""

    summary: str  # what it records, as the docs list it
    stay: Stay | None = None
    ends_as: str | None = None  # how a stay it ends ended ("completed", "went back", ...)
    failure: bool = False
    child_lane: bool = False
    by_person: bool = False


EVENTS: dict[EventName, Meaning] = {
    "start": Meaning("The instance started.", child_lane=True, by_person=True),
    "resume": Meaning("A paused instance resumed, or work found interrupted was taken up "
                      "(`data.interrupted`).", by_person=True),
    "step-enter": Meaning("A step was entered.", stay="enters", child_lane=True),
    "step-leave": Meaning("A step was left, its work done and its validation passed.",
                          stay="leaves", ends_as="completed", child_lane=True),
    "validate": Meaning("A step was validated (`data.errors`, empty when it passed)."),
    "skip": Meaning("A step was skipped (`data.unavailable`: its `when` said no, it was "
                    "never entered).", stay="leaves", ends_as="skipped", child_lane=True,
                    by_person=True),
    "back": Meaning("Went back to the step named.", stay="returns", ends_as="went back",
                    child_lane=True, by_person=True),
    "retry": Meaning("A failed or blocked instance was retried (from a step of an "
                     "operation's journal: `data.operation`, `data.from_step`, "
                     "`data.entries_deleted`).", child_lane=True, by_person=True),
    "cancel": Meaning("The instance was cancelled (`data.reason`).", stay="ends",
                      ends_as="cancelled", child_lane=True, by_person=True),
    "rollback": Meaning("A rollback started, resumed or finished (`data.phase`).",
                        by_person=True),
    "compensate": Meaning("One compensation of a rollback finished."),
    "complete": Meaning("The instance completed.", stay="ends", ends_as="completed",
                        child_lane=True),
    "error": Meaning("Something failed: a hook raised, work failed or was interrupted, a "
                     "compensation failed.", failure=True, child_lane=True),
    "state-update": Meaning("The state was replaced.", by_person=True),
    "operation-queued": Meaning("An operation's attempt was handed out."),
    "operation-started": Meaning("A worker claimed an operation's attempt."),
    "operation-progress": Meaning("An operation reported progress."),
    "operation-succeeded": Meaning("An operation succeeded (its result is kept)."),
    "operation-failed": Meaning("An operation failed for good."),
    "operation-retrying": Meaning("An operation's attempt failed; another follows after "
                                  "its delay."),
    "operation-cancelled": Meaning("An operation was told to stop."),
    "operation-blocked": Meaning("An operation blocked: a person must change something."),
    "operation-skipped": Meaning("An operation that had not started was skipped.",
                                 by_person=True),
    "branch-started": Meaning("A parallel branch was handed out."),
    "branch-succeeded": Meaning("A parallel branch succeeded."),
    "branch-failed": Meaning("A parallel branch failed."),
    "branch-cancelled": Meaning("A parallel branch was told to stop."),
    "compensation-started": Meaning("A worker took up a compensation of a rollback."),
    "attempt-stopped": Meaning("An attempt told to stop has ended."),
    "task-open": Meaning("A step's task opened."),
    "task-claim": Meaning("A candidate claimed the task.", by_person=True),
    "task-release": Meaning("The task was given back to its candidates.", by_person=True),
    "task-complete": Meaning("The task was completed with its input.", by_person=True),
    "task-overdue": Meaning("The task passed its due time (escalated, when it says so)."),
    "task-cancel": Meaning("The task was cancelled: its step was left another way."),
    "signal-wait": Meaning("A step started waiting for a signal."),
    "signal": Meaning("The signal the step waited for came (`data.sender`, "
                      "`data.message_id`)."),
    "signal-timeout": Meaning("A signal's timeout passed with no signal."),
    "timer-wait": Meaning("A step started waiting for its timer."),
    "timer-fire": Meaning("A step's timer fell due."),
    "pause": Meaning("The instance was paused (`data.reason`).", by_person=True),
    "held": Meaning("Something came back while paused and is held for resume."),
    "rewind": Meaning("Went back to an earlier step in one command (`data.steps_left`).",
                      stay="returns", ends_as="rewound", child_lane=True, by_person=True),
}

if set(EVENTS) != set(get_args(EventName)):  # the names and their meanings, declared once
    raise RuntimeError(f"Events without a meaning: {set(get_args(EventName)) - set(EVENTS)}; "
                       f"meanings of no event: {set(EVENTS) - set(get_args(EventName))}")

EVENT_TYPES: tuple[EventName, ...] = tuple(EVENTS)
# A stay in the event's step begins: entered, or gone back to.
STAY_STARTS: tuple[EventName, ...] = tuple(
    name for name, meaning in EVENTS.items() if meaning.stay in ("enters", "returns"))
# The stay in the event's own step ends: left, or skipped (the index of the workflow page's
# stays: models.py).
STAY_LEAVES: tuple[EventName, ...] = tuple(
    name for name, meaning in EVENTS.items() if meaning.stay == "leaves")
# Every event that ends the stay open then, with how it ended (the timeline's bars; read
# by the type of an event row, a str).
STAY_ENDS: Mapping[str, str] = {
    name: meaning.ends_as for name, meaning in EVENTS.items() if meaning.ends_as}
FAILURES: tuple[EventName, ...] = tuple(
    name for name, meaning in EVENTS.items() if meaning.failure)
CHILD_LANE: tuple[EventName, ...] = tuple(
    name for name, meaning in EVENTS.items() if meaning.child_lane)
BY_PERSON: tuple[EventName, ...] = tuple(
    name for name, meaning in EVENTS.items() if meaning.by_person)
