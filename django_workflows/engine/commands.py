"""Every command, declared once: its name, what it takes (its fields) and its rule.

The commands people give (:class:`PersonCommand`) also declare a label, a
summary and whether they undo work (``destructive``); the service functions,
the testing helpers, the API's actions (with their OpenAPI entries) and the
admin's buttons are all generated from :data:`COMMANDS`. Adding a command is
one class here plus its rule function in ``rules/``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .errors import OperationBlockedError
from .outcome import DeadlineKind
from .rules import deadlines, navigation, results, saga, tasks
from .snapshot import ErrorInfo, OperationSnapshot, Progress

Rule = Callable[[Any, Any], None]  # rule(change, command)


@dataclass(frozen=True)
class Command:
    """A command the engine applies; ``rule`` is the function that applies it."""

    name: ClassVar[str]
    rule: ClassVar[Rule]

    def __init_subclass__(cls, *, name: str = "", rule: Rule | None = None,
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if name:
            cls.name = name
        if rule is not None:
            cls.rule = staticmethod(rule)


COMMANDS: dict[str, type[PersonCommand]] = {}


@dataclass(frozen=True)
class PersonCommand(Command):
    """A command people give through the API, the admin or ``services``.

    ``action``: offered as ``POST /api/instances/<id>/<name>/`` and as a button
    (``update_state`` is ``PATCH state/`` and the admin's state form instead).
    ``on_task``: given to a task, ``POST /api/tasks/<id>/<name>/`` and the admin's
    task page (its field ``task`` names the task).
    """

    label: ClassVar[str]
    summary: ClassVar[str]
    destructive: ClassVar[bool]
    action: ClassVar[bool]
    on_task: ClassVar[bool]

    def __init_subclass__(cls, *, label: str = "", summary: str = "",
                          destructive: bool = False, action: bool = True,
                          on_task: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.label, cls.summary, cls.destructive = label, summary, destructive
        cls.action, cls.on_task = action and not on_task, on_task
        COMMANDS[cls.name] = cls

    @classmethod
    def takes(cls) -> tuple[str, ...]:
        """The names of what the command takes besides the instance (``reason``, ``value``)."""
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class Start(PersonCommand, name="start", rule=navigation.start, label="Start",
            summary="Start an idle instance"):
    pass


@dataclass(frozen=True)
class Next(PersonCommand, name="next", rule=navigation.next_, label="Next",
           summary="Validate and leave the current step, then follow the transitions"):
    pass


@dataclass(frozen=True)
class Back(PersonCommand, name="back", rule=navigation.back, label="Back",
           summary="Go back to the previous step"):
    pass


@dataclass(frozen=True)
class Skip(PersonCommand, name="skip", rule=navigation.skip, label="Skip",
           summary="Skip the current step"):
    pass


@dataclass(frozen=True)
class SkipOperation(PersonCommand, name="skip_operation", rule=navigation.skip_one_operation,
                    label="Skip operation",
                    summary="Skip an operation of the current step that has not started"):
    operation: str | None = None  # its id; by default the one that would run next


@dataclass(frozen=True)
class Validate(PersonCommand, name="validate", rule=navigation.validate, label="Validate",
               summary="Validate the current step (errors: blocked)"):
    pass


@dataclass(frozen=True)
class Retry(PersonCommand, name="retry", rule=navigation.retry, label="Retry",
            summary="Retry a failed or blocked instance"):
    pass


@dataclass(frozen=True)
class Cancel(PersonCommand, name="cancel", rule=navigation.cancel, label="Cancel",
             summary="Cancel the instance", destructive=True):
    reason: str | None = None  # recorded on the ``cancel`` event


@dataclass(frozen=True)
class Rollback(PersonCommand, name="rollback", rule=saga.rollback, label="Roll back",
               summary="Undo what was done and return to idle", destructive=True):
    pass


@dataclass(frozen=True)
class UpdateState(PersonCommand, name="update_state", rule=navigation.update_state,
                  label="Save state", summary="Replace the state", action=False):
    """Replace the state with ``value``, or with ``value(current_state)`` if callable."""

    value: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]] | None = None


# -- tasks: what people do on a step's task --------------------------------------------


@dataclass(frozen=True)
class Claim(PersonCommand, name="claim", rule=tasks.claim, label="Claim", on_task=True,
            summary="Take the task: until you release it, only you may complete it"):
    task: str | None = None  # the task's id; by default the current step's


@dataclass(frozen=True)
class Release(PersonCommand, name="release", rule=tasks.release, label="Release", on_task=True,
              summary="Give the task back to its candidates"):
    task: str | None = None


@dataclass(frozen=True)
class Complete(PersonCommand, name="complete", rule=tasks.complete, label="Complete",
               on_task=True, summary="Give the task's input; the step moves on"):
    task: str | None = None
    input: Mapping[str, Any] | None = None  # checked against the task's form


# -- what workers and the sweep report ------------------------------------------------


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
class AttemptStarted(Command, name="attempt_started", rule=results.attempt_started):
    """A worker claimed an attempt; refused when its token is no longer current.

    ``at``: when it was claimed, if that was before now (the service records a
    claim on the attempt's own row, and on the instance with its next change).
    """

    token: str
    at: float | None = None


@dataclass(frozen=True)
class AttemptFinished(Command, name="attempt_finished", rule=results.attempt_finished):
    token: str
    outcome: AttemptOutcome = field(default_factory=lambda: AttemptOutcome(ok=True))


@dataclass(frozen=True)
class AttemptInterrupted(Command, name="attempt_interrupted",
                         rule=results.attempt_interrupted):
    """The worker of an attempt stopped sending heartbeats."""

    token: str


@dataclass(frozen=True)
class DeadlineDue(Command, name="deadline_due", rule=deadlines.deadline_due):
    kind: DeadlineKind
    token: str


ACTIONS: dict[str, type[PersonCommand]] = {n: c for n, c in COMMANDS.items() if c.action}
"""The commands offered as actions and buttons, in the order of the buttons."""
TASK_COMMANDS: dict[str, type[PersonCommand]] = {n: c for n, c in COMMANDS.items() if c.on_task}
"""The commands given to a task."""
