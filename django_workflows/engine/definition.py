"""The public definition API: Workflow, Step, Transition, Operation, Branch.

Definitions are frozen and checked when they are constructed, so a broken one
fails at import time with the offending id in the message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

from .bounds import MAX_LOGS
from .errors import DefinitionError
from .schema import check_schema
from .slots import Limit, Rate, check_limits

if TYPE_CHECKING:
    from .waits import Signal

Hook = Callable[..., Any]
Seconds = float | int | timedelta
Advance = Literal["manual", "auto"]


def to_seconds(value: Seconds | None, *, what: str) -> float | None:
    """A number of seconds or a timedelta as float seconds; None and 0 mean "no limit"."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DefinitionError(f"{what} must be a number of seconds or a timedelta, not {value!r}")
    if value < 0:
        raise DefinitionError(f"{what} must not be negative, got {value!r}")
    return float(value) if value > 0 else None


def in_seconds(value: Seconds | None) -> float | None:
    """A time of a built definition (a step's ``timeout``, an operation's ``timeout``,
    ``retry_delay`` and ``max_retry_delay``, a task's ``due``) as its type: given as a number
    or a timedelta, ``__post_init__`` made it float seconds or None."""
    return cast("float | None", value)


def _check_callable(value: Any, what: str, *, required: bool = False) -> None:
    if (required or value is not None) and not callable(value):
        raise DefinitionError(f"{what} must be callable, not {value!r}", "not_callable")


def _check_id(value: Any, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise DefinitionError(f"{what} id must be a non-empty string, not {value!r}")


@dataclass(frozen=True, eq=False)
class Operation:
    """Long, retryable work run by a worker.

    ``retries`` counts extra attempts (``retries=3``: at most 4 attempts). The
    delay before attempt ``n + 1`` is ``retry_delay * backoff ** (n - 1)``,
    capped at ``max_retry_delay``.

    ``durable=True``: its code is durable (``docs/durable-code.md``): it may wait with
    ``ctx.sleep``, ``ctx.sleep_until``, ``ctx.wait_for_signal`` and ``ctx.ask`` without
    holding a worker, and an attempt whose worker died is retried by itself (its journaled
    steps do not run again). ``signals``: the signals its code waits for, with their
    senders, schema and correlation, as a step's ``wait=Signal(...)`` declares them.
    """

    id: str
    run: Hook = field(kw_only=True)
    title: str | None = field(default=None, kw_only=True)
    description: str | None = field(default=None, kw_only=True)
    metadata: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    retries: int = field(default=0, kw_only=True)
    retry_delay: Seconds | None = field(default=None, kw_only=True)
    backoff: float = field(default=1.0, kw_only=True)
    max_retry_delay: Seconds | None = field(default=None, kw_only=True)
    timeout: Seconds | None = field(default=None, kw_only=True)
    rollback: Hook | None = field(default=None, kw_only=True)
    max_logs: int = field(default=MAX_LOGS, kw_only=True)  # log lines kept, the newest
    # Operations that ``run`` starts with ``ctx.run_child``; declaring them lets
    # a rollback in another process find their ``rollback``.
    children: Sequence[Operation] = field(default=(), kw_only=True)
    # Held back until a slot is free: at most ``max`` running per key, ``limit`` per window.
    concurrency: Limit | None = field(default=None, kw_only=True)
    rate: Rate | None = field(default=None, kw_only=True)
    durable: bool = field(default=False, kw_only=True)
    signals: Sequence[Signal] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        _check_id(self.id, "Operation")
        what = f'Operation "{self.id}"'
        self._check_durable(what)
        _check_callable(self.run, f"{what}: run", required=True)
        _check_callable(self.rollback, f"{what}: rollback")
        check_limits(self.concurrency, self.rate, what)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise DefinitionError(f"{what}: retries must be an int, not {self.retries!r}")
        if isinstance(self.max_logs, bool) or not isinstance(self.max_logs, int) \
                or self.max_logs < 0:
            raise DefinitionError(f"{what}: max_logs must be an int >= 0, not {self.max_logs!r}")
        if not isinstance(self.backoff, int | float) or self.backoff < 1:
            raise DefinitionError(f"{what}: backoff must be a number >= 1, not {self.backoff!r}")
        set_ = object.__setattr__
        set_(self, "retries", max(self.retries, 0))  # negative means none
        set_(self, "retry_delay", to_seconds(self.retry_delay, what=f"{what}: retry_delay"))
        set_(self, "max_retry_delay",
             to_seconds(self.max_retry_delay, what=f"{what}: max_retry_delay"))
        set_(self, "timeout", to_seconds(self.timeout, what=f"{what}: timeout"))
        set_(self, "metadata", dict(self.metadata or {}))
        set_(self, "children", tuple(self.children))
        set_(self, "title", self.title or self.id)

    def _check_durable(self, what: str) -> None:
        if not isinstance(self.durable, bool):
            raise DefinitionError(f"{what}: durable must be True or False, not "
                                  f"{self.durable!r}")
        signals = tuple(self.signals or ())
        names = set()
        for signal in signals:
            if not isinstance(signal, Wait) or signal.kind != "signal":  # a Signal (waits.py)
                raise DefinitionError(f"{what}: signals must be Signal(...), not {signal!r}")
            signal.check(what)
            if signal.name in names:
                raise DefinitionError(f'{what}: the signal "{signal.name}" is declared twice',
                                      "duplicate_id")
            names.add(signal.name)
        if signals and not self.durable:
            raise DefinitionError(f"{what}: only durable code waits for signals: give it "
                                  "durable=True")
        object.__setattr__(self, "signals", signals)

    def signal(self, name: str) -> Signal | None:
        """The signal ``name`` its durable code may wait for (None if undeclared)."""
        return next((s for s in self.signals if s.name == name), None)

    @property
    def max_attempts(self) -> int:
        return self.retries + 1

    def delay_before(self, attempt: int) -> float:
        """Seconds to wait before ``attempt`` (2 for the first retry)."""
        retry_delay = in_seconds(self.retry_delay)
        max_retry_delay = in_seconds(self.max_retry_delay)
        if not retry_delay or attempt < 2:
            return 0.0
        delay = retry_delay * self.backoff ** (attempt - 2)
        return min(delay, max_retry_delay) if max_retry_delay else delay

    def find_child(self, operation_id: str) -> Operation | None:
        for child in self.children:
            if child.id == operation_id:
                return child
            found = child.find_child(operation_id)
            if found:
                return found
        return None


@dataclass(frozen=True, eq=False)
class Branch:
    """One branch of a parallel step; branches of a step run concurrently."""

    id: str
    run: Hook = field(kw_only=True)
    compensate: Hook | None = field(default=None, kw_only=True)
    concurrency: Limit | None = field(default=None, kw_only=True)
    rate: Rate | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        _check_id(self.id, "Branch")
        _check_callable(self.run, f'Branch "{self.id}": run', required=True)
        _check_callable(self.compensate, f'Branch "{self.id}": compensate')
        check_limits(self.concurrency, self.rate, f'Branch "{self.id}"')


CANDIDATE_KINDS = ("user", "group", "perm")


def check_candidates(value: Any, what: str) -> tuple[str, ...]:
    """``["user:ann", "group:managers", "perm:app.codename"]``, each kind checked."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise DefinitionError(f"{what} must be a list of candidates, not {value!r}")
    found = []
    for candidate in value:
        kind, _, name = candidate.partition(":") if isinstance(candidate, str) else ("", "", "")
        if kind not in CANDIDATE_KINDS or not name or (kind == "perm" and "." not in name):
            raise DefinitionError(
                f'{what}: {candidate!r} is not a candidate: write "user:<username>", '
                '"group:<name>" or "perm:<app_label>.<codename>"')
        found.append(candidate)
    return tuple(found)


def check_show(value: Any, what: str) -> tuple[str, ...] | Hook | None:
    """``["amount", "receipt.url"]`` (state keys, dotted paths reach inside) or a hook."""
    if value is None or callable(value):
        return cast("Hook | None", value)
    problem = (f"{what} must be a list of state keys (\"amount\", \"receipt.url\") or a "
               f"callable of the context returning label/value pairs, not {value!r}")
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise DefinitionError(problem)
    keys = tuple(value)
    for key in keys:
        if not isinstance(key, str) or not key or "" in key.split("."):
            raise DefinitionError(f"{problem}: {key!r} is not a state key")
    return keys


@dataclass(frozen=True, eq=False)
class Task:
    """Input a person must give before a step moves on (``docs/tasks.md``).

    ``form`` is a JSON Schema or a pydantic model the input must satisfy;
    ``candidates`` who may give it (or a hook of the context returning them,
    asked when the task opens); ``exclude_owner`` keeps the instance's owner
    out (nobody decides their own claim); past ``due`` the task is overdue and
    ``escalate_to`` become candidates too. The input is merged into the state
    under ``key`` (default: the step's id), or by ``merge(state, input)``.
    ``show`` is what the person deciding sees above the form: state keys (dotted
    paths reach inside), or a hook of the context returning label/value pairs
    (``engine/shown.py``).
    """

    form: Any
    candidates: Sequence[str] | Hook = field(default=(), kw_only=True)
    exclude_owner: bool = field(default=False, kw_only=True)
    due: Seconds | None = field(default=None, kw_only=True)
    escalate_to: Sequence[str] = field(default=(), kw_only=True)
    key: str | None = field(default=None, kw_only=True)
    merge: Callable[[dict[str, Any], dict[str, Any]], Mapping[str, Any]] | None = field(
        default=None, kw_only=True)
    title: str | None = field(default=None, kw_only=True)
    show: Sequence[str] | Hook | None = field(default=None, kw_only=True)

    def check(self, what: str) -> None:
        """Checked by its step, whose id the messages name."""
        what = f"{what}: task"
        object.__setattr__(self, "show", check_show(self.show, f"{what} show"))
        if callable(self.candidates):
            pass  # asked when the task opens
        else:
            object.__setattr__(self, "candidates",
                               check_candidates(self.candidates, f"{what} candidates"))
        object.__setattr__(self, "escalate_to",
                           check_candidates(self.escalate_to, f"{what} escalate_to"))
        object.__setattr__(self, "due", to_seconds(self.due, what=f"{what} due"))
        _check_callable(self.merge, f"{what} merge")
        if self.key is not None and (not isinstance(self.key, str) or not self.key):
            raise DefinitionError(f"{what} key must be a non-empty string, not {self.key!r}")
        if self.form is None:
            raise DefinitionError(f"{what} needs a form: a JSON Schema or a pydantic model")
        check_schema(self.form, what, name="form")


class Wait:
    """What a step waits for besides its work and its task: a signal or a time
    (``Signal`` and ``Timer``, in ``engine/waits.py``)."""

    kind: str

    def check(self, what: str) -> None:
        """Checked by its step, whose id the messages name."""


@dataclass(frozen=True, eq=False)
class Step:
    """A step of a workflow. ``advance="auto"`` moves on once its work succeeded."""

    id: str
    title: str | None = field(default=None, kw_only=True)
    enter: Hook | None = field(default=None, kw_only=True)
    leave: Hook | None = field(default=None, kw_only=True)
    validate: Hook | None = field(default=None, kw_only=True)
    when: Hook | None = field(default=None, kw_only=True)
    compensate: Hook | None = field(default=None, kw_only=True)
    timeout: Seconds | None = field(default=None, kw_only=True)
    operations: Sequence[Operation] = field(default=(), kw_only=True)
    parallel: Sequence[Branch | Hook] = field(default=(), kw_only=True)
    nested: Workflow | str | None = field(default=None, kw_only=True)
    advance: Advance = field(default="manual", kw_only=True)
    # False: ``skip`` is refused on this step (``not_skippable``), whoever asks.
    skippable: bool = field(default=True, kw_only=True)
    task: Task | None = field(default=None, kw_only=True)
    # A signal or a time to wait for: the step moves on when it comes (engine/waits.py).
    wait: Wait | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        _check_id(self.id, "Step")
        what = f'Step "{self.id}"'
        if not isinstance(self.skippable, bool):
            raise DefinitionError(f"{what}: skippable must be True or False, "
                                  f"not {self.skippable!r}")
        if self.task is not None:
            if not isinstance(self.task, Task):
                raise DefinitionError(f"{what}: task must be a Task, not {self.task!r}")
            self.task.check(what)
        if self.wait is not None:
            if not isinstance(self.wait, Wait):
                raise DefinitionError(f"{what}: wait must be a Signal or a Timer, "
                                      f"not {self.wait!r}")
            self.wait.check(what)
        for name in ("enter", "leave", "validate", "when", "compensate"):
            _check_callable(getattr(self, name), f"{what}: {name}")
        if self.advance not in ("manual", "auto"):
            raise DefinitionError(
                f'{what}: advance must be "manual" or "auto", not {self.advance!r}')
        if self.nested is not None and not isinstance(self.nested, Workflow | str):
            raise DefinitionError(f"{what}: nested must be a Workflow or a workflow id")
        operations = tuple(self.operations)
        for operation in operations:
            if not isinstance(operation, Operation):
                raise DefinitionError(f"{what}: operations must be Operation objects, "
                                      f"not {operation!r}")
        branches = []
        for index, branch in enumerate(self.parallel):
            if isinstance(branch, Branch):
                branches.append(branch)
            elif callable(branch):  # a bare callable: a branch named "<step>:<index>"
                branches.append(Branch(f"{self.id}:{index}", run=branch))
            else:
                raise DefinitionError(f"{what}: parallel items must be Branch objects or "
                                      f"callables, not {branch!r}")
        _unique((b.id for b in branches), f"{what}: branch")
        set_ = object.__setattr__
        set_(self, "operations", operations)
        set_(self, "parallel", tuple(branches))
        set_(self, "timeout", to_seconds(self.timeout, what=f"{what}: timeout"))
        set_(self, "title", self.title or self.id)

    @property
    def has_work(self) -> bool:
        return bool(self.operations or self.parallel)

    @property
    def branches(self) -> tuple[Branch, ...]:
        """``parallel`` as built: every item a ``Branch`` (a bare callable is wrapped in one,
        named ``<step>:<index>``)."""
        return cast("tuple[Branch, ...]", self.parallel)


@dataclass(frozen=True, eq=False)
class Transition:
    """``source -> target``; the first transition whose ``when`` holds is taken."""

    source: str
    target: str
    when: Hook | None = field(default=None, kw_only=True)
    label: str | None = field(default=None, kw_only=True)  # shown on the diagram

    def __post_init__(self) -> None:
        _check_id(self.source, "Transition source")
        _check_id(self.target, "Transition target")
        _check_callable(self.when, f'Transition "{self.source}" -> "{self.target}": when')
        if self.label is not None and not isinstance(self.label, str):
            raise DefinitionError(f'Transition "{self.source}" -> "{self.target}": label must '
                                  f"be a string, not {self.label!r}")


@dataclass(frozen=True, eq=False)
class Workflow:
    """A workflow definition. Instances of it live in the database."""

    id: str
    version: int = field(default=1, kw_only=True)
    title: str | None = field(default=None, kw_only=True)
    steps: Sequence[Step] = field(default=(), kw_only=True)
    transitions: Sequence[Transition] = field(default=(), kw_only=True)
    initial: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = field(
        default=None, kw_only=True)
    state_schema: Any = field(default=None, kw_only=True)
    migrate: Callable[[dict[str, Any]], dict[str, Any] | None] | None = field(
        default=None, kw_only=True)
    exit_guard: Hook | None = field(default=None, kw_only=True)
    analytics: Callable[[Any], Any] | None = field(default=None, kw_only=True)
    on_observer_error: Callable[[BaseException], Any] | None = field(default=None, kw_only=True)
    # permission(user, instance, action) -> bool: an extra rule of this definition
    # on top of the app's access rules (owner, model permissions, superuser).
    permission: Callable[[Any, Any, str], bool] | None = field(default=None, kw_only=True)
    # True: instances are only started as another workflow's nested child, never created
    # directly (the services, the API and the admin refuse it).
    nested_only: bool = field(default=False, kw_only=True)
    # False: a completed instance stays completed: ``back`` and ``rewind`` refuse it
    # (``reopen_forbidden``). True (the original runner's rule): back reopens it.
    reopen_completed: bool = field(default=True, kw_only=True)
    # Filled in by __post_init__ for fast lookups.
    steps_by_id: Mapping[str, Step] = field(init=False, repr=False)
    operations_by_id: Mapping[str, Operation] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_id(self.id, "Workflow")
        what = f'Workflow "{self.id}"'
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise DefinitionError(f"{what}: version must be a positive int, not {self.version!r}")
        steps = tuple(self.steps)
        for step in steps:
            if not isinstance(step, Step):
                raise DefinitionError(f"{what}: steps must be Step objects, not {step!r}")
        _unique((s.id for s in steps), f"{what}: step")
        steps_by_id = {step.id: step for step in steps}
        transitions = tuple(self.transitions)
        for transition in transitions:
            if not isinstance(transition, Transition):
                raise DefinitionError(f"{what}: transitions must be Transition objects, "
                                      f"not {transition!r}")
            for end in (transition.source, transition.target):
                if end not in steps_by_id:
                    raise DefinitionError(
                        f'{what}: transition "{transition.source}" -> "{transition.target}" '
                        f'names unknown step "{end}"', "unknown_step")
        operations: dict[str, Operation] = {}
        for step in steps:
            for operation in step.operations:
                if operation.id in operations:
                    raise DefinitionError(
                        f'{what}: step "{step.id}": duplicate operation id "{operation.id}"',
                        "duplicate_id")
                operations[operation.id] = operation
        set_ = object.__setattr__
        set_(self, "steps", steps)
        _check_fan_outs(self.signal_waits(), what)
        for name in ("migrate", "exit_guard", "analytics", "on_observer_error", "permission"):
            _check_callable(getattr(self, name), f"{what}: {name}")
        for flag in ("nested_only", "reopen_completed"):
            if not isinstance(getattr(self, flag), bool):
                raise DefinitionError(f"{what}: {flag} must be True or False, "
                                      f"not {getattr(self, flag)!r}")
        if self.initial is not None and not callable(self.initial) and not isinstance(
                self.initial, Mapping):
            raise DefinitionError(f"{what}: initial must be a dict or a callable returning one")
        set_(self, "transitions", transitions)
        set_(self, "steps_by_id", steps_by_id)
        set_(self, "operations_by_id", operations)
        set_(self, "title", self.title or self.id)
        if self.state_schema is not None:
            check_schema(self.state_schema, what)

    def __repr__(self) -> str:
        return f"<Workflow {self.id!r} v{self.version}>"

    @property
    def first_step(self) -> Step | None:
        return self.steps[0] if self.steps else None

    def step(self, step_id: str) -> Step:
        try:
            return self.steps_by_id[step_id]
        except KeyError:
            raise DefinitionError(f'Unknown workflow step "{step_id}"') from None

    def transitions_from(self, step_id: str) -> Iterable[Transition]:
        return (t for t in self.transitions if t.source == step_id)

    def initial_state(self) -> dict[str, Any]:
        """A fresh initial state: a factory is called, a plain value deep-copied."""
        if self.initial is None:
            return {}
        value = self.initial() if callable(self.initial) else copy.deepcopy(self.initial)
        return dict(value)

    def signal_waits(self, name: str | None = None) -> list[tuple[str, Signal]]:
        """Where the workflow waits for signals (``name``'s alone, if given): (step id,
        declaration) of each step's ``wait=Signal(...)`` and each signal its operations'
        durable code declares (under the operation's step)."""
        found: list[tuple[str, Signal]] = []
        for step in self.steps:
            wait = step.wait
            if wait is not None and wait.kind == "signal":
                found.append((step.id, cast("Signal", wait)))
            found += [(step.id, signal) for operation in step.operations
                      for signal in operation.signals]
        return [(step, signal) for step, signal in found if name in (None, signal.name)]

    def find_operation(self, operation_id: str) -> Operation | None:
        """An operation of any step, or a declared child of one."""
        found = self.operations_by_id.get(operation_id)
        if found:
            return found
        for operation in self.operations_by_id.values():
            found = operation.find_child(operation_id)
            if found:
                return found
        return None


def _check_fan_outs(waits: Iterable[tuple[str, Signal]], what: str) -> None:
    """The waits for one signal agree on its fan-out: a delivery reaches a workflow's
    instances one way, whichever step they wait in."""
    declared: dict[str, str] = {}
    for _, signal in waits:
        name, fan_out = signal.name, signal.fan_out
        if declared.setdefault(name, fan_out) != fan_out:
            raise DefinitionError(f'{what}: the steps that wait for signal "{name}" declare '
                                  f'fan_out "{declared[name]}" and "{fan_out}": give them one',
                                  "fan_out_differs")


def _unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise DefinitionError(f'{what} id "{item}" is used twice', "duplicate_id")
        seen.add(item)
