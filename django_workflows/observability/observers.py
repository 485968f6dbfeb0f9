"""What the services tell observers (metrics, traces), and the observers in use.

``active`` is empty unless the ``METRICS`` or ``TRACING`` setting is on: then every hook
below costs the services one branch (``if observers.active``), and nothing is imported
from prometheus-client or OpenTelemetry. The hooks:

- :func:`observed` wraps each unit of work's entry point (``services/unit.py``: a command
  given, a signal delivered, a worker's report, something the sweep fired; and
  ``services.create``): a :class:`Unit` records what it was, when it took the row lock
  (:func:`locked`, from the core) and when it committed, and what came of it;
- :func:`handing_out`: the attempt and deadline rows a unit writes, before they are
  saved (tracing stores its context on them);
- :func:`deadline_due`: the sweep fires a deadline row;
- :func:`attempt_run`: a worker runs an attempt it claimed;
- :func:`observed_sweep`: one turn of the sweep.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, suppress
from dataclasses import dataclass, field
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from django.core.signals import setting_changed
from django.db import transaction

from ..conf import SETTING_NAME, workflow_settings
from ..exceptions import WorkflowError
from ..models import Attempt, Deadline, WorkflowInstance

if TYPE_CHECKING:
    from ..engine import AttemptOutcome
    from ..services.attempts import Claimed

P = ParamSpec("P")
R = TypeVar("R")


class Observer:
    """An observer of the services; every method does nothing unless overridden.

    A method returning a context manager is entered around the work it observes (a span
    made current there is the parent of what that work does); the ``*_done`` methods are
    called once the work ended, inside those context managers.
    """

    def unit(self, unit: Unit) -> AbstractContextManager[Any] | None:
        return None

    def unit_done(self, unit: Unit) -> None:
        pass

    def handing_out(self, attempts: Sequence[Attempt], deadlines: Sequence[Deadline]) -> None:
        pass

    def deadline_due(self, deadline: Deadline) -> None:
        pass

    def attempt(self, run: AttemptRun) -> AbstractContextManager[Any] | None:
        return None

    def attempt_done(self, run: AttemptRun) -> None:
        pass

    def sweep(self) -> AbstractContextManager[Any] | None:
        return None


active: tuple[Observer, ...] = ()

logger = logging.getLogger("django_workflows")


def _safely(call: Callable[..., Any], *args: Any) -> Any:
    """An observer's call: one that raises is logged, and never changes the work's result
    (the work has committed, or must go on)."""
    try:
        return call(*args)
    except Exception:
        logger.exception("Observer %r failed", call)
        return None


def _enter(around: ExitStack, manager: AbstractContextManager[Any] | None) -> None:
    if manager is not None:
        _safely(around.enter_context, manager)


def configure() -> None:
    """The observers the settings turn on (at start-up, and when the setting changes)."""
    global active
    found: list[Observer] = []
    if not isinstance(workflow_settings.user_settings, dict):  # check E010 says so
        active = ()
        return
    # Their extras are imported only when they are on; one that is missing is the system
    # check E060 or E061, not a traceback at start-up.
    if workflow_settings.METRICS:
        with suppress(ImportError):
            from .metrics import MetricsObserver

            found.append(MetricsObserver())
    if workflow_settings.TRACING:
        with suppress(ImportError):
            from .tracing import TracingObserver

            found.append(TracingObserver())
    active = tuple(found)


def _reconfigure(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:  # conf's own receiver, connected first, cleared its cache
        configure()


setting_changed.connect(_reconfigure)


# -- units of work -----------------------------------------------------------------------


@dataclass
class Unit:
    """One unit of work as observers see it: one command applied to one instance (a person's
    command, a signal, a worker's report, something due) in one transaction."""

    kind: str  # "command", "create", "signal", "report", "fire"
    command: str  # the engine's name of the command ("next", "attempt_finished", ...)
    instance_id: str | None
    workflow: str | None = None
    detail: Any = None  # the engine's command, when there is one
    started: float = field(default_factory=time.perf_counter)
    locked_at: float | None = None  # when the row lock was taken (None: it was not)
    committed_at: float | None = None  # when the transaction that held it committed
    revision_before: int | None = None
    result: Any = None  # what the entry point returned
    error: BaseException | None = None
    ended: float | None = None

    def committed(self) -> None:
        self.committed_at = time.perf_counter()

    @property
    def applied(self) -> Any:
        """The unit's ``Applied`` (None: it did nothing, or raised, or was a create)."""
        return self.result if hasattr(self.result, "outcome") else None

    @property
    def happened(self) -> bool:
        """Whether the unit did something to record: it ran the engine, created an instance
        or raised (a busy tree left to the next sweep, or a report that gave way, did not)."""
        return self.error is not None or self.result is not None

    @property
    def moved(self) -> bool:
        applied = self.applied
        return self.error is None and (applied is None or bool(applied.outcome.moved))

    @property
    def outcome(self) -> str:
        """``moved``, ``refused`` (a rule's refusal or a typed error: :attr:`code`),
        ``replayed`` (an idempotency key's first answer), or ``error``."""
        if self.error is not None:
            return "refused" if isinstance(self.error, WorkflowError) else "error"
        applied = self.applied
        if applied is not None and not applied.outcome.moved:
            return "refused"
        if getattr(self.instance, "replayed", False):
            return "replayed"
        return "moved"

    @property
    def code(self) -> str:
        """The refusal's stable code, the error's code or type, or ``""``."""
        if self.error is not None:
            code = getattr(self.error, "code", None)
            return str(code) if code else type(self.error).__name__
        applied = self.applied
        if applied is not None and not applied.outcome.moved:
            return str(applied.outcome.code or "")
        return ""

    @property
    def instance(self) -> WorkflowInstance | None:
        applied = self.applied
        if applied is not None:
            row: WorkflowInstance = applied.instance
            return row
        return self.result if isinstance(self.result, WorkflowInstance) else None

    @property
    def revision_after(self) -> int | None:
        row = self.instance
        return row.revision if row is not None else None

    @property
    def effects(self) -> tuple[Any, ...]:
        applied = self.applied
        return tuple(applied.outcome.effects) if applied is not None else ()

    @property
    def seconds(self) -> float:
        return (self.ended or time.perf_counter()) - self.started

    @property
    def lock_held(self) -> float | None:
        """From the row lock to the commit; None when no lock was held or it rolled back."""
        if self.locked_at is None or self.committed_at is None:
            return None
        return self.committed_at - self.locked_at


Describe = Callable[..., tuple[str, str | None, str | None, Any]]


def observed(kind: str, describe: Describe) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Observe a unit of work's entry point; ``describe(*args, **kwargs)`` gives its
    command's name, the instance id, the workflow (when known before the lock) and the
    engine's command."""
    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if not active:
                return function(*args, **kwargs)
            name, instance_id, workflow, detail = describe(*args, **kwargs)
            return _observe(Unit(kind, name, instance_id, workflow, detail), function,
                            *args, **kwargs)
        return run
    return decorate


_local = threading.local()


def _units() -> list[Unit]:
    units: list[Unit] = _local.__dict__.setdefault("units", [])
    return units


def _observe(unit: Unit, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    observers = active
    units = _units()
    units.append(unit)
    try:
        with ExitStack() as around:
            for observer in observers:
                _enter(around, _safely(observer.unit, unit))
            try:
                unit.result = function(*args, **kwargs)
                return unit.result
            except BaseException as error:
                unit.error = error
                raise
            finally:
                unit.ended = time.perf_counter()
                if unit.workflow is None and unit.instance is not None:
                    unit.workflow = unit.instance.workflow
                for observer in observers:
                    _safely(observer.unit_done, unit)
    finally:
        units.pop()


def locked(row: WorkflowInstance) -> None:
    """The core took the row lock of the unit's target ``row`` (call it under the lock, in
    the unit's transaction, before anything changed)."""
    units = _units()
    if not units or units[-1].locked_at is not None:
        return
    unit = units[-1]
    unit.locked_at = time.perf_counter()
    unit.workflow = unit.workflow or row.workflow
    unit.revision_before = row.revision
    transaction.on_commit(unit.committed)  # before the unit's own: its work runs after


def commanded(command: Any) -> None:
    """The unit's engine command, known only once it ran under the lock (a signal's is made
    there, once its sender was judged and the signal recorded)."""
    units = _units()
    if units and units[-1].detail is None:
        units[-1].detail = command


def wrote_at_once(row: WorkflowInstance, revision_before: int, began: float) -> None:
    """The core wrote the unit's target ``row`` in one statement that took its lock and
    committed (``began``: when it was sent; in an outer transaction the lock is held until
    that commits). Call it right after the statement."""
    units = _units()
    if not units or units[-1].locked_at is not None:
        return
    unit = units[-1]
    unit.locked_at = began
    unit.workflow = unit.workflow or row.workflow
    unit.revision_before = revision_before
    transaction.on_commit(unit.committed)


def current_unit() -> Unit | None:
    units = _units()
    return units[-1] if units else None


# -- rows handed out, deadlines due ------------------------------------------------------


def handing_out(attempts: Sequence[Attempt], deadlines: Sequence[Deadline]) -> None:
    """Attempt and deadline rows about to be saved (each observer may add to them)."""
    for observer in active:
        _safely(observer.handing_out, attempts, deadlines)


def deadline_due(deadline: Deadline) -> None:
    """The sweep is about to fire ``deadline`` (its row, as the sweep read it)."""
    for observer in active:
        _safely(observer.deadline_due, deadline)


# -- attempts run by a worker ------------------------------------------------------------


@dataclass
class AttemptRun:
    """An attempt a worker claimed and runs."""

    claimed: Claimed
    started: float = field(default_factory=time.perf_counter)
    outcome: AttemptOutcome | None = None
    accepted: bool | None = None  # its result was recorded (False: it was stale, dropped)
    error: BaseException | None = None
    ended: float | None = None
    _row: tuple[Any, Any] | None = None

    @property
    def token(self) -> str:
        return self.claimed.work.token

    @property
    def workflow(self) -> str:
        return self.claimed.work.definition.id

    @property
    def target(self) -> str:
        """The operation's or branch's id (a compensation's target)."""
        work = self.claimed.work
        if work.operation is not None:
            return work.operation.id
        if work.branch is not None:
            return work.branch.id
        return work.item.target if work.item is not None else ""

    @property
    def result(self) -> str:
        """``succeeded``, ``failed``, ``blocked``, ``dropped`` (its result was stale), or
        ``error`` (our code raised)."""
        if self.error is not None or self.outcome is None:
            return "error"
        if self.accepted is False:
            return "dropped"
        if self.outcome.ok:
            return "succeeded"
        return "blocked" if self.outcome.blocked else "failed"

    def stored(self) -> tuple[Any, Any]:
        """``(enqueued_at, trace_context)`` of the attempt's row, as its claim read them, or
        else one query, shared by the observers."""
        if self._row is None and self.claimed.stored is not None:
            self._row = self.claimed.stored  # the claim read them (PostgreSQL)
        if self._row is None:
            found = Attempt.objects.filter(token=self.token).values_list(
                "enqueued_at", "trace_context").first()
            self._row = found if found is not None else (None, None)
        return self._row


def attempt_run(claimed: Claimed, run: Callable[[], tuple[AttemptOutcome, bool]]) -> None:
    """A worker runs the attempt it claimed: ``run()`` runs it and reports it, and returns
    the outcome and whether the result was recorded."""
    observers = active
    record = AttemptRun(claimed)
    with ExitStack() as around:
        for observer in observers:
            _enter(around, _safely(observer.attempt, record))
        try:
            record.outcome, record.accepted = run()
        except BaseException as error:
            record.error = error
            raise
        finally:
            record.ended = time.perf_counter()
            for observer in observers:
                _safely(observer.attempt_done, record)


# -- the sweep ----------------------------------------------------------------------------


def observed_sweep(function: Callable[P, R]) -> Callable[P, R]:
    """Observe one turn of the sweep (what it fires are units of their own)."""
    @wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not active:
            return function(*args, **kwargs)
        with ExitStack() as around:
            for observer in active:
                _enter(around, _safely(observer.sweep))
            return function(*args, **kwargs)
    return run
