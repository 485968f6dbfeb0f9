"""Immutable snapshots of instances, and their exact JSON round trip.

The JSON shape is an instance's persisted shape in snake_case (``version``,
``state``, ``current_step``, ``completed_steps``, ...): what a migration
(``Workflow(migrate=...)``) receives, with what a database needs to resume
safely: the current step run and its deadline, attempts that were told to stop,
and the rollback plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .definition import Operation

WorkflowStatus = Literal["idle", "running", "blocked", "failed", "cancelled", "completed",
                         "rolling-back", "paused"]
OperationStatus = Literal["idle", "queued", "running", "waiting", "blocked", "retrying",
                          "suspended", "succeeded", "failed", "cancelled", "skipped"]
BranchStatus = Literal["running", "succeeded", "failed", "cancelled"]
AttemptKind = Literal["operation", "branch", "compensation"]  # what an attempt's token names

# The groups of statuses the rules and their readers ask about, declared once.
FINISHED: tuple[WorkflowStatus, ...] = ("completed", "cancelled")  # no command moves it
# Its current step moves on, and takes what comes back (results, signals, timers).
MOVING: tuple[WorkflowStatus, ...] = ("running", "blocked")
# Started and not finished, nor idle again: the instances an operator watches.
ACTIVE: tuple[WorkflowStatus, ...] = ("running", "blocked", "failed", "rolling-back",
                                      "paused")
# "suspended": its durable code waits (a timer, a signal, a task) with no attempt out.
IN_FLIGHT = frozenset({"queued", "running", "waiting", "retrying", "suspended"})


@dataclass(frozen=True)
class Progress:
    current: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class ErrorInfo:
    """An error as the snapshot keeps it: the exception's class name and message."""

    name: str
    message: str


@dataclass(frozen=True)
class OperationSnapshot:
    id: str
    step: str
    title: str
    description: str | None = None
    status: OperationStatus = "idle"
    attempt: int = 0
    progress: Progress | None = None
    started_at: float | None = None
    completed_at: float | None = None
    result: Any = None
    error: ErrorInfo | None = None
    children: tuple[OperationSnapshot, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    logs: tuple[str, ...] = ()
    token: str | None = None  # the attempt that may report a result now
    retry_at: float | None = None  # when a waiting operation tries again
    # Durable code (engine/journal.py): the key of its journal, kept across its attempts;
    # what ended its last wait, for the next attempt's replay ({"position", "kind",
    # "name", "value", "timed_out"}); how many entries its journal held when it suspended.
    journal: str | None = None
    woken: Mapping[str, Any] | None = None
    journaled: int = 0

    @property
    def in_flight(self) -> bool:
        return self.status in IN_FLIGHT


@dataclass(frozen=True)
class BranchSnapshot:
    id: str
    step: str
    status: BranchStatus
    error: str | None = None
    token: str | None = None
    claimed: bool = False  # a worker took it: a stop must wait for that worker
    # Told to stop, it finished anyway: its effects happened, so a rollback compensates it.
    finished_late: bool = False


@dataclass(frozen=True)
class StepRun:
    """One execution of a step's background work, fenced by its token."""

    step: str
    token: str
    started_at: float
    deadline: float | None = None


@dataclass(frozen=True)
class StoppingAttempt:
    """An attempt told to stop whose worker has not yet acknowledged it.

    ``resume`` marks an operation whose next attempt waits for this one to stop,
    so two attempts of one operation never overlap.
    """

    token: str
    kind: AttemptKind
    target: str
    reason: str
    since: float
    resume: bool = False


@dataclass(frozen=True)
class RollbackItem:
    """One compensation of a rollback plan, recorded once it finished."""

    kind: Literal["operation", "branch", "nested", "step"]
    target: str  # operation id, branch id, child instance id or step id
    step: str | None = None
    path: tuple[str, ...] = ()  # for an operation's child: the ids of its parents
    status: Literal["pending", "running", "done", "failed"] = "pending"
    token: str | None = None
    error: str | None = None
    claimed: bool = False  # a worker took it: a stop must wait for that worker
    result: Any = None  # what the compensation returned (a refund's id), once done
    finished_at: float | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}:{'/'.join((*self.path, self.target))}"


@dataclass(frozen=True)
class Standing:
    """Where an instance stood when its rollback started: what the rollback undid."""

    status: WorkflowStatus
    state: Mapping[str, Any] = field(default_factory=dict)
    current_step: str | None = None
    history: tuple[str, ...] = ()
    completed_steps: tuple[str, ...] = ()
    skipped_steps: tuple[str, ...] = ()
    started_at: float | None = None
    completed_at: float | None = None


@dataclass(frozen=True)
class RollbackPlan:
    """A rollback's compensations, with when it started, who started it and where the
    instance stood then; kept as the instance's ``rolled_back`` record once it finished."""

    items: tuple[RollbackItem, ...] = ()
    started_at: float | None = None
    by: str | None = None  # who rolled it back, as the service names users (None: code)
    before: Standing | None = None
    finished_at: float | None = None

    @property
    def next_item(self) -> tuple[int, RollbackItem] | None:
        for index, item in enumerate(self.items):
            if item.status != "done":
                return index, item
        return None


TaskStatus = Literal["open", "done", "cancelled"]


@dataclass(frozen=True)
class TaskSnapshot:
    """The task of the current step: who may decide, who took it, who decided and what.

    ``candidates`` are resolved when it opens (``"user:..."``, ``"group:..."``,
    ``"perm:..."``); ``claimed_by`` and ``completed_by`` are actors (the service
    names them by user id).
    """

    id: str
    step: str
    title: str
    status: TaskStatus = "open"
    candidates: tuple[str, ...] = ()
    exclude_owner: bool = False
    claimed_by: str | None = None
    completed_by: str | None = None
    input: Mapping[str, Any] | None = None
    opened_at: float | None = None
    due_at: float | None = None
    overdue: bool = False
    completed_at: float | None = None
    # Asked by an operation's durable code (``ctx.ask``): its id, the journal's position
    # that waits, and the task as the code gave it (its form's JSON Schema, ``show``).
    operation: str | None = None
    position: int | None = None
    asked: Mapping[str, Any] | None = None

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    @property
    def named(self) -> dict[str, Any]:
        """What its events carry to name it: its id, and for a task asked by durable code
        (whose title is its own, not its step's) the operation and the title."""
        if self.operation is None:
            return {"task": self.id}
        return {"task": self.id, "operation": self.operation, "title": self.title}


@dataclass(frozen=True)
class WaitSnapshot:
    """What the current step waits for: a signal (by ``name``, with its ``correlation``)
    or a timer; ``until`` is when its timeout or its timer falls due (its deadline's
    ``token``). Kept once it ``arrived``, until the step is left."""

    kind: Literal["signal", "timer"]
    step: str
    token: str
    since: float
    name: str | None = None
    correlation: str | None = None
    until: float | None = None
    arrived: float | None = None  # when the signal or the time came: the step may move on
    # Set when an operation's durable code waits (not the step): its id, and the position
    # of the journal's entry that waits.
    operation: str | None = None
    position: int | None = None


@dataclass(frozen=True)
class HeldInput:
    """What came to a paused instance (a worker's result, a deadline, a signal), held to
    be applied on resume: the engine command's ``name`` and its fields as JSON."""

    command: str
    values: Mapping[str, Any]
    at: float

    @property
    def token(self) -> str | None:
        return self.values.get("token")


@dataclass(frozen=True)
class PauseSnapshot:
    """A paused instance: since when, who paused it and why, the ``status`` that resume
    gives back, and what came meanwhile (``held``, in the order it came)."""

    at: float
    status: WorkflowStatus
    by: str | None = None  # as the service names users (None: code)
    reason: str | None = None
    held: tuple[HeldInput, ...] = ()


@dataclass(frozen=True)
class WorkflowSnapshot:
    id: str
    workflow: str
    version: int
    status: WorkflowStatus = "idle"
    state: Mapping[str, Any] = field(default_factory=dict)
    current_step: str | None = None
    completed_steps: tuple[str, ...] = ()
    skipped_steps: tuple[str, ...] = ()
    history: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    operations: tuple[OperationSnapshot, ...] = ()
    parallel: tuple[BranchSnapshot, ...] = ()
    nested: WorkflowSnapshot | None = None
    parent_id: str | None = None
    parent_step: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    step_run: StepRun | None = None
    stopping: tuple[StoppingAttempt, ...] = ()
    rollback: RollbackPlan | None = None
    task: TaskSnapshot | None = None  # the current step's task (or the last one)
    waiting: WaitSnapshot | None = None  # the current step's signal or timer
    paused: PauseSnapshot | None = None  # set while the status is "paused"
    rolled_back: RollbackPlan | None = None  # the last rollback that finished: its record

    @property
    def open_task(self) -> TaskSnapshot | None:
        """The current step's task, while it waits for a person."""
        task = self.task
        return task if task is not None and task.is_open and task.step == self.current_step \
            else None

    def operation(self, operation_id: str) -> OperationSnapshot | None:
        return next((op for op in self.operations if op.id == operation_id), None)

    def branch(self, step: str, branch_id: str) -> BranchSnapshot | None:
        return next((b for b in self.parallel if b.step == step and b.id == branch_id), None)

    @property
    def work_in_flight(self) -> bool:
        """An operation or a branch of this instance (its children aside) is still out."""
        return (any(op.in_flight for op in self.operations)
                or any(b.status == "running" for b in self.parallel))

    def tree(self) -> Iterator[WorkflowSnapshot]:
        """This instance, then its nested child, the child's own child, and so on."""
        node: WorkflowSnapshot | None = self
        while node is not None:
            yield node
            node = node.nested

    def find_child(self, instance_id: str) -> WorkflowSnapshot | None:
        """This snapshot or a nested one with that id."""
        return next((node for node in self.tree() if node.id == instance_id), None)

    def changed(self, **changes: Any) -> WorkflowSnapshot:
        """``dataclasses.replace(self, **changes)``, without its ``__init__``: the rules
        replace the snapshot a dozen times per command, and replace cost most of that."""
        unknown = changes.keys() - _SNAPSHOT_FIELDS
        if unknown:
            raise TypeError(f"WorkflowSnapshot has no field {sorted(unknown)[0]!r}")
        new = object.__new__(WorkflowSnapshot)
        new.__dict__.update(self.__dict__, **changes)
        return new


_SNAPSHOT_FIELDS = frozenset(f.name for f in fields(WorkflowSnapshot))


# -- JSON ------------------------------------------------------------------

_LEAVES = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass's fields, as fields() gives them


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _LEAVES:  # most values: skip the slower checks below
        return value
    if kind is dict:
        return {key: _plain(item) for key, item in value.items()}
    if kind is tuple and _LEAVES.issuperset(map(type, value)):
        # A history, the steps done: they grow with the instance, and their items are
        # plain already, so they are copied without a call per item.
        return list(value)
    names = _FIELD_NAMES.get(kind)
    if names is None and hasattr(value, "__dataclass_fields__"):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


def plain_json(value: Any) -> Any:
    """A value as plain JSON types: dataclasses as objects, tuples as lists."""
    return _plain(value)


def to_json(snapshot: WorkflowSnapshot | OperationSnapshot | BranchSnapshot) -> dict[str, Any]:
    """A snapshot (or one operation's or branch's) as plain JSON types (children inline)."""
    plain: dict[str, Any] = _plain(snapshot)
    return plain


_KNOWN_NAMES: dict[type, frozenset[str]] = {}  # a dataclass's field names, for _known


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The items of ``data`` that are fields of ``cls`` (the names are worked out once per
    class: every command reads a snapshot from JSON, a worker's more than once)."""
    names = _KNOWN_NAMES.get(cls)
    if names is None:
        names = _KNOWN_NAMES[cls] = frozenset(f.name for f in fields(cls))
    return {key: value for key, value in data.items() if key in names}


def _optional(cls: type, data: Any) -> Any:
    return None if data is None else cls(**_known(cls, data))


def operation_from_json(data: Mapping[str, Any]) -> OperationSnapshot:
    values = _known(OperationSnapshot, data)
    values["progress"] = _optional(Progress, data.get("progress"))
    values["error"] = _optional(ErrorInfo, data.get("error"))
    values["children"] = tuple(operation_from_json(c) for c in data.get("children") or ())
    values["metadata"] = dict(data.get("metadata") or {})
    values["logs"] = tuple(data.get("logs") or ())
    return OperationSnapshot(**values)


def _rollback_from_json(data: Any) -> RollbackPlan | None:
    if data is None:
        return None
    items = []
    for item in data.get("items") or ():
        values = _known(RollbackItem, item)
        values["path"] = tuple(item.get("path") or ())
        items.append(RollbackItem(**values))
    before = data.get("before")
    if before is not None:
        before = Standing(**{**_known(Standing, before), "state": dict(before.get("state") or {}),
                             **{name: tuple(before.get(name) or ()) for name in (
                                 "history", "completed_steps", "skipped_steps")}})
    return RollbackPlan(items=tuple(items), started_at=data.get("started_at"),
                        by=data.get("by"), before=before, finished_at=data.get("finished_at"))


def _paused_from_json(data: Any) -> PauseSnapshot | None:
    if data is None:
        return None
    held = tuple(HeldInput(command=h["command"], values=dict(h.get("values") or {}), at=h["at"])
                 for h in data.get("held") or ())
    return PauseSnapshot(**{**_known(PauseSnapshot, data), "held": held})


def from_json(data: Mapping[str, Any]) -> WorkflowSnapshot:
    """The inverse of :func:`to_json`: ``from_json(to_json(s)) == s``."""
    values = _known(WorkflowSnapshot, data)
    for name in ("completed_steps", "skipped_steps", "history", "errors"):
        values[name] = tuple(data.get(name) or ())
    values["state"] = dict(data.get("state") or {})
    values["operations"] = tuple(operation_from_json(o) for o in data.get("operations") or ())
    values["parallel"] = tuple(BranchSnapshot(**_known(BranchSnapshot, b))
                               for b in data.get("parallel") or ())
    values["nested"] = from_json(data["nested"]) if data.get("nested") else None
    values["step_run"] = _optional(StepRun, data.get("step_run"))
    values["stopping"] = tuple(StoppingAttempt(**_known(StoppingAttempt, s))
                               for s in data.get("stopping") or ())
    values["rollback"] = _rollback_from_json(data.get("rollback"))
    values["rolled_back"] = _rollback_from_json(data.get("rolled_back"))
    values["paused"] = _paused_from_json(data.get("paused"))
    task = data.get("task")
    if task:
        task_values = _known(TaskSnapshot, task)
        task_values["candidates"] = tuple(task.get("candidates") or ())
        values["task"] = TaskSnapshot(**task_values)
    values["waiting"] = _optional(WaitSnapshot, data.get("waiting"))
    return WorkflowSnapshot(**values)


def new_snapshot(instance_id: str, workflow: str, version: int, state: Mapping[str, Any], *,
                 parent_id: str | None = None, parent_step: str | None = None
                 ) -> WorkflowSnapshot:
    return WorkflowSnapshot(id=instance_id, workflow=workflow, version=version,
                            state=dict(state), parent_id=parent_id, parent_step=parent_step)


def new_operation_snapshot(definition: Operation, step: str) -> OperationSnapshot:
    """An operation of ``step`` before its first attempt, as its definition describes it."""
    return OperationSnapshot(id=definition.id, step=step, title=definition.title or definition.id,
                             description=definition.description,
                             metadata=dict(definition.metadata))


__all__ = [
    "BranchSnapshot", "ErrorInfo", "HeldInput", "OperationSnapshot", "PauseSnapshot",
    "Progress", "RollbackItem", "RollbackPlan", "Standing", "StepRun", "StoppingAttempt",
    "TaskSnapshot", "WaitSnapshot", "WorkflowSnapshot",
    "from_json",
    "new_operation_snapshot", "new_snapshot", "plain_json", "to_json",
]
