"""Every command, declared once: its name, what it takes (its fields) and its rule.

The commands people give (:class:`PersonCommand`) also declare a label, a
summary, whether they undo work (``destructive``), what they act on (the
instance, one of its operations, its task), which setting bounds their wait for
the row lock, which of their fields are sized before it, whether only operators
may give them (``for_operators``), and the values a form may offer for a field
now (``offered``). Every command declares what it does while its instance is
paused (``while_paused``: refused, accepted, or held for resume; ``rules/paused.py``).
The API's actions (with their OpenAPI entries and request bodies), the admin's
buttons and forms, the typed service functions and the docs' lists all read
:data:`COMMANDS`.
Adding a command is one class here plus its rule function in ``rules/``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from typing import Any, ClassVar, Literal, get_args, get_origin, get_type_hints

from .errors import OperationBlockedError
from .held import HELD
from .journal import ReplayMismatch, Suspension
from .outcome import DeadlineKind
from .rules import deadlines, navigation, recovery, results, saga, tasks
from .rules import waits as waiting
from .snapshot import (
    ErrorInfo,
    OperationSnapshot,
    Progress,
    WorkflowSnapshot,
    operation_from_json,
)

Rule = Callable[[Any, Any], None]  # rule(change, command)
# What a command does while its instance is paused: refused (code ``paused``), accepted
# (its rule runs), or held and applied by its rule on resume (``rules/paused.py``).
WhilePaused = Literal["refused", "accepted", "held"]


@dataclass(frozen=True)
class Command:
    """A command the engine applies; ``rule`` is the function that applies it."""

    name: ClassVar[str]
    rule: ClassVar[Rule]
    while_paused: ClassVar[WhilePaused] = "accepted"

    @classmethod
    def from_held(cls, values: Mapping[str, Any]) -> Command:
        """The command again, from the JSON of its fields a paused instance kept."""
        return cls(**values)

    def __init_subclass__(cls, *, name: str = "", rule: Rule | None = None,
                          while_paused: WhilePaused | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if name:
            cls.name = name
        if rule is not None:
            cls.rule = staticmethod(rule)
        if while_paused is not None:
            cls.while_paused = while_paused
        if cls.while_paused == "held":
            HELD[cls.name] = cls


COMMANDS: dict[str, type[PersonCommand]] = {}
"""Every command people give, by name, in the order they were declared."""
Offered = Callable[[WorkflowSnapshot], Sequence[Any]]

Target = Literal["instance", "operation", "task"]
# The fields of a command offered on a journal's entries (``on_journal``) that name the entry.
JOURNAL_FIELDS = ("operation", "from_step")
# How a field is given as data: the API's body and the admin's form take these kinds.
InputKind = Literal["text", "integer", "number", "boolean", "object", "array", "json", "choice"]


@dataclass(frozen=True)
class Input:
    """One thing a command takes, as a request body or a form asks for it."""

    name: str
    kind: InputKind | None  # None: no data can say it (a function): not an action's input
    required: bool
    nullable: bool
    choices: tuple[Any, ...] = ()
    help: str = ""  # what it means, for the API's schema (the field's ``metadata["help"]``)


@dataclass(frozen=True)
class PersonCommand(Command):
    """A command people give through the API, the admin or ``services``.

    ``action``: offered as ``POST /api/instances/<id>/<name>/`` and as a button
    (``update_state`` is ``PATCH state/`` and the admin's state form instead).
    ``acts_on``: what it acts on besides the instance: ``"operation"`` (its field
    ``operation`` names one of the current step's; the admin offers it on that
    operation's row) or ``"task"`` (its field ``task`` names it: ``POST
    /api/tasks/<id>/<name>/`` and the admin's task page).
    ``lock_timeout``: the setting that bounds its wait for the row lock.
    ``sized``: its fields whose JSON is held to ``MAX_STATE_BYTES`` before the lock.
    ``for_operators``: only users who act on every instance (the model's change
    permission, a superuser) may give it; owning the instance is not enough.
    ``offered``: for a field, the values a form may offer now, from the instance's
    snapshot (``rewind``'s ``step``: the earlier steps of its history); any value may
    still be given, and the rule judges it.
    ``while_paused``: ``"refused"`` unless declared ``"accepted"`` (``cancel``).
    ``on_journal``: also offered on each entry of the journal of an operation of the
    current step (the admin's "Retry from here"): its fields ``operation`` and
    ``from_step`` name the entry, and the page fills them in (its command bar asks for
    neither).

    "What applies now" asks each command as :meth:`asked` makes it: its defaults, and
    None for a field it requires; its rule answers for any value there.
    """

    label: ClassVar[str]
    summary: ClassVar[str]
    destructive: ClassVar[bool]
    action: ClassVar[bool]
    acts_on: ClassVar[Target]
    lock_timeout: ClassVar[str]
    sized: ClassVar[tuple[str, ...]]
    for_operators: ClassVar[bool]
    offered: ClassVar[Mapping[str, Offered]]
    on_journal: ClassVar[bool]
    while_paused: ClassVar[WhilePaused] = "refused"

    def __init_subclass__(cls, *, label: str = "", summary: str = "",
                          destructive: bool = False, action: bool = True,
                          acts_on: Target = "instance", lock_timeout: str = "LOCK_TIMEOUT",
                          sized: tuple[str, ...] = (), for_operators: bool = False,
                          offered: Mapping[str, Offered] | None = None,
                          on_journal: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.label, cls.summary, cls.destructive = label, summary, destructive
        cls.action, cls.acts_on = action and acts_on != "task", acts_on
        cls.lock_timeout, cls.sized = lock_timeout, tuple(sized)
        cls.for_operators, cls.offered = for_operators, dict(offered or {})
        cls.on_journal = on_journal
        if acts_on != "instance" and acts_on not in cls.__annotations__:
            raise TypeError(f"Command {cls.name!r} acts on an {acts_on}: declare the field "
                            f"{acts_on!r} that names it")
        if on_journal and not set(JOURNAL_FIELDS) <= set(cls.__annotations__):
            raise TypeError(f"Command {cls.name!r} is offered on a journal's entries: "
                            f"declare the fields {JOURNAL_FIELDS} that name the entry")
        COMMANDS[cls.name] = cls

    @classmethod
    def takes(cls) -> tuple[str, ...]:
        """The names of what the command takes besides the instance (``reason``, ``value``)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def inputs(cls) -> tuple[Input, ...]:
        """What it takes, each as data gives it (its kind, whether it must be given)."""
        return _inputs_of(cls)  # type: ignore[arg-type]  # a class is hashable

    @classmethod
    def asked(cls) -> PersonCommand:
        """The command as "what applies now" asks it: nothing given but its defaults."""
        return cls(**{taken.name: None for taken in cls.inputs() if taken.required})

    @classmethod
    def filled_by_page(cls) -> tuple[str, ...]:
        """Its fields a page fills in from where its button is (the operation it acts on,
        the journal entry it starts from): never asked for on the command bar."""
        target = cls.target_field()
        return (*((target,) if target else ()), *(JOURNAL_FIELDS if cls.on_journal else ()))

    @classmethod
    def target_field(cls) -> str | None:
        """The field naming what it acts on (``operation``, ``task``); None: the instance."""
        return None if cls.acts_on == "instance" else cls.acts_on

    @classmethod
    def offers(cls, snapshot: WorkflowSnapshot) -> dict[str, tuple[Any, ...]]:
        """For each field it declares ``offered``, the values a form may offer now."""
        return {name: tuple(values(snapshot)) for name, values in cls.offered.items()}


@cache
def _inputs_of(command: type[PersonCommand]) -> tuple[Input, ...]:
    hints = get_type_hints(command)
    found = []
    for f in fields(command):
        kind, nullable, choices = _kind_of(hints[f.name])
        found.append(Input(f.name, kind, required=f.default is MISSING
                           and f.default_factory is MISSING, nullable=nullable,
                           choices=choices, help=str(f.metadata.get("help", ""))))
    return tuple(found)


def _kind_of(hint: Any) -> tuple[InputKind | None, bool, tuple[Any, ...]]:
    """A field's type as data gives it: its kind, whether it may be null, its choices."""
    options = get_args(hint) if get_origin(hint) in (typing.Union, types.UnionType) \
        else (hint,)
    nullable = type(None) in options
    given = [option for option in options if option is not type(None)]
    if len(given) != 1:
        return None, nullable, ()  # several types, one of them a function (update_state)
    (kind,) = given
    origin = get_origin(kind) or kind
    if origin is Literal:
        return "choice", nullable, get_args(kind)
    scalars: tuple[tuple[type, InputKind], ...] = (
        (bool, "boolean"), (int, "integer"), (float, "number"), (str, "text"))
    for types_, name in scalars:
        if kind is types_:
            return name, nullable, ()
    if kind is Any:
        return "json", True, ()  # any JSON value: null too
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return "object", nullable, ()
    if isinstance(origin, type) and issubclass(origin, Sequence):
        return "array", nullable, ()
    return None, nullable, ()


class Declared(Mapping[str, type[PersonCommand]]):
    """The declared commands a test selects, read from :data:`COMMANDS` as it is now."""

    def __init__(self, selects: Callable[[type[PersonCommand]], bool]) -> None:
        self.selects = selects

    def __getitem__(self, name: str) -> type[PersonCommand]:
        declared = COMMANDS[name]
        if not self.selects(declared):
            raise KeyError(name)
        return declared

    def __iter__(self) -> Iterator[str]:
        return (name for name, declared in list(COMMANDS.items()) if self.selects(declared))

    def __len__(self) -> int:
        return sum(1 for _ in self)


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
class Rewind(PersonCommand, name="rewind", rule=recovery.rewind, label="Rewind",
             summary="Go back to an earlier step of the history, as that many backs would",
             offered={"step": recovery.earlier_steps}):
    step: str  # an earlier step of the history (the latest time it was entered)


@dataclass(frozen=True)
class Skip(PersonCommand, name="skip", rule=navigation.skip, label="Skip",
           summary="Skip the current step"):
    pass


@dataclass(frozen=True)
class SkipOperation(PersonCommand, name="skip_operation", rule=navigation.skip_one_operation,
                    label="Skip operation", acts_on="operation",
                    summary="Skip an operation of the current step that has not started"):
    operation: str | None = None  # its id; by default the one that would run next


@dataclass(frozen=True)
class Validate(PersonCommand, name="validate", rule=navigation.validate, label="Validate",
               summary="Validate the current step (errors: blocked)"):
    pass


@dataclass(frozen=True)
class Retry(PersonCommand, name="retry", rule=navigation.retry, label="Retry",
            summary="Retry a failed or blocked instance", on_journal=True):
    # Both or neither: retry from that entry of the operation's journal (rules/journals.py).
    operation: str | None = field(default=None, metadata={
        "help": "Retry from a step of this operation's journal (with from_step)."})
    from_step: int | None = field(default=None, metadata={
        "help": "The position of the journal's entry to retry from: it and the entries "
                "after it are deleted, and the operation's code runs those steps again."})


@dataclass(frozen=True)
class Pause(PersonCommand, name="pause", rule=recovery.pause, label="Pause",
            summary="Hand out no new work and move no step on until resumed",
            for_operators=True, while_paused="accepted"):
    reason: str | None = None  # recorded on the ``pause`` event and shown while paused


@dataclass(frozen=True)
class Resume(PersonCommand, name="resume", rule=recovery.resume, label="Resume",
             summary="Go on, applying what came back while paused",
             for_operators=True, while_paused="accepted"):
    pass


@dataclass(frozen=True)
class Cancel(PersonCommand, name="cancel", rule=navigation.cancel, label="Cancel",
             summary="Cancel the instance", destructive=True, while_paused="accepted",
             lock_timeout="CANCEL_LOCK_TIMEOUT"):  # never lost behind a slow command
    reason: str | None = None  # recorded on the ``cancel`` event


@dataclass(frozen=True)
class Rollback(PersonCommand, name="rollback", rule=saga.rollback, label="Roll back",
               summary="Undo what was done and return to idle", destructive=True):
    pass


@dataclass(frozen=True)
class UpdateState(PersonCommand, name="update_state", rule=navigation.update_state,
                  label="Save state", summary="Replace the state", action=False,
                  sized=("value",)):
    """Replace the state with ``value``, or with ``value(current_state)`` if callable."""

    value: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]] | None = None


# -- tasks: what people do on a step's task --------------------------------------------


@dataclass(frozen=True)
class Claim(PersonCommand, name="claim", rule=tasks.claim, label="Claim", acts_on="task",
            summary="Take the task: until you release it, only you may complete it"):
    task: str | None = None  # the task's id; by default the current step's


@dataclass(frozen=True)
class Release(PersonCommand, name="release", rule=tasks.release, label="Release",
              acts_on="task",
              summary="Give the task back to its candidates"):
    task: str | None = None


@dataclass(frozen=True)
class Complete(PersonCommand, name="complete", rule=tasks.complete, label="Complete",
               acts_on="task", sized=("input",),
               summary="Give the task's input; the step moves on"):
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
    # Its durable code waits (engine/journal.py): the attempt ended to wait for this.
    suspension: Suspension | None = None

    @property
    def blocked(self) -> bool:
        return self.error is not None and self.error.name == OperationBlockedError.__name__

    @property
    def replay_mismatch(self) -> bool:
        """It failed because its code changed under its journal: no retry can mend that."""
        return self.error is not None and self.error.name == ReplayMismatch.__name__

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptOutcome:
        error, progress = data.get("error"), data.get("progress")
        return cls(ok=bool(data.get("ok")), value=data.get("value"),
                   error=ErrorInfo(**error) if error else None,
                   children=tuple(operation_from_json(c) for c in data.get("children") or ()),
                   logs=tuple(data.get("logs") or ()),
                   progress=Progress(**progress) if progress else None,
                   suspension=Suspension.from_json(data["suspension"])
                   if data.get("suspension") else None)


@dataclass(frozen=True)
class AttemptStarted(Command, name="attempt_started", rule=results.attempt_started):
    """A worker claimed an attempt; refused when its token is no longer current.

    ``at``: when it was claimed, if that was before now (the service records a
    claim on the attempt's own row, and on the instance with its next change).
    """

    token: str
    at: float | None = None


@dataclass(frozen=True)
class AttemptFinished(Command, name="attempt_finished", rule=results.attempt_finished,
                      while_paused="held"):
    token: str
    outcome: AttemptOutcome = field(default_factory=lambda: AttemptOutcome(ok=True))

    @classmethod
    def from_held(cls, values: Mapping[str, Any]) -> AttemptFinished:
        values = dict(values)
        if "outcome" in values:
            values["outcome"] = AttemptOutcome.from_json(values["outcome"])
        return cls(**values)


@dataclass(frozen=True)
class AttemptInterrupted(Command, name="attempt_interrupted",
                         rule=results.attempt_interrupted, while_paused="held"):
    """The worker of an attempt stopped sending heartbeats."""

    token: str


@dataclass(frozen=True)
class ReceiveSignal(Command, name="signal", rule=waiting.receive, while_paused="held"):
    """A signal delivered to the instance (``services.signal``).

    ``correlation``: given when the signal was addressed by it, and then it must be the
    one the step waits with. ``signal_id``: its row, taken by the instance.
    """

    signal: str
    payload: Any = None
    correlation: str | None = None
    message_id: str | None = None
    sender: str | None = None
    signal_id: Any = None


@dataclass(frozen=True)
class DeadlineDue(Command, name="deadline_due", rule=deadlines.deadline_due,
                  while_paused="held"):
    kind: DeadlineKind
    token: str


ACTIONS = Declared(lambda declared: declared.action)
"""The commands offered as actions and buttons, in the order of the buttons."""
TASK_COMMANDS = Declared(lambda declared: declared.acts_on == "task")
"""The commands given to a task."""
