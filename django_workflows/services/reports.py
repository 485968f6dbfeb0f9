"""What the service layer tells those who watch it: one typed report after each unit of work,
and one after each turn of the sweep.

:class:`Applied` is what a unit of work did (the engine's outcome and the row it saved).
The services measure, and call no observer: a unit of work fills its :class:`UnitReport`
as it goes (when it took the row lock, which path wrote it, what it applied, the attempts
and deadlines it made), and :func:`publish` hands the report to the subscribers once the
unit's transaction committed, first of what runs then (before the unit's new work goes
to the runner), or at once when it ended without a commit (it raised, found nothing to
do). A turn of the sweep is bracketed by :func:`sweep_turn`, whose report follows it.

The subscribers are the observers the settings name (``OBSERVERS``, dotted paths, loaded
as DRF loads its classes; ``METRICS`` and ``TRACING`` add the app's own), made again when
the setting changes. With none, a unit of work pays one branch (:func:`watched`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal

from django.core.signals import setting_changed
from django.db import transaction
from django.utils.module_loading import import_string

from .. import clock, engine
from ..conf import SETTING_NAME, workflow_settings
from ..exceptions import InvalidState, WorkflowError, WorkflowNotMoved
from ..models import Deadline, WorkflowInstance

logger = logging.getLogger("django_workflows")

UnitKind = Literal["command", "create", "signal", "report", "fire"]
# How a unit wrote its instance: under the row lock, or in one statement on the row it
# read (PostgreSQL: services/unit.py, apply_if_unchanged).
WritePath = Literal["locked", "at_once"]

# The app's own observers, turned on by a switch each (their extras imported only then).
METRICS_OBSERVER = "django_workflows.observability.metrics.MetricsObserver"
TRACING_OBSERVER = "django_workflows.observability.tracing.TracingObserver"


@dataclass(frozen=True)
class Applied:
    """What a unit of work did: the engine's outcome and the target's saved row."""

    outcome: engine.Outcome
    instance: WorkflowInstance
    definition: engine.Workflow  # the root's
    signals: Mapping[Any, Any] = field(default_factory=dict)  # rows it settled (TakeSignal)

    @property
    def refusal(self) -> WorkflowNotMoved | None:
        """The refusal as the services raise it, or None when the command moved."""
        outcome = self.outcome
        if outcome.moved:
            return None
        assert outcome.code is not None
        if outcome.code == "invalid_state":
            return InvalidState(outcome.message or "Invalid state", outcome.field_errors,
                                self.instance)
        return WorkflowNotMoved(outcome.message or outcome.code, outcome.code,
                                instance=self.instance, field_errors=outcome.field_errors)


@dataclass
class UnitReport:
    """One unit of work: one command applied to one instance (a person's command, a signal,
    a worker's report, something due, a create) in one transaction, as it went."""

    kind: UnitKind
    command: str  # the engine's name of the command ("next", "attempt_finished", ...)
    instance_id: str | None
    workflow: str | None = None
    detail: Any = None  # the engine's command, when there is one
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=clock.now)  # the clock's time (a fake one too)
    started_ns: int = field(default_factory=time.time_ns)  # the wall's (a span's start)
    locked_at: float | None = None  # when the row lock was taken (None: it was not)
    committed_at: float | None = None  # when its transaction committed
    ended: float | None = None
    path: WritePath | None = None
    revision_before: int | None = None
    applied: Applied | None = None  # what the engine did and the row saved (None: nothing)
    created: WorkflowInstance | None = None  # a create's new instance
    error: BaseException | None = None
    attempts_made: tuple[str, ...] = ()  # the tokens of the attempts it handed out
    deadlines_made: tuple[tuple[str, str], ...] = ()  # (token, kind) of its deadline rows
    fired: Deadline | None = None  # the deadline row the sweep fired with it
    turn: int | None = None  # the sweep's turn it is part of (the turn's start, in ns)
    published: bool = False

    def locked(self, row: WorkflowInstance) -> None:
        """The unit took the row lock of its target ``row`` (under the lock, before any
        change)."""
        if self.locked_at is None:
            self.locked_at, self.path = time.perf_counter(), "locked"
            self.workflow = self.workflow or row.workflow
            self.revision_before = row.revision

    def wrote_at_once(self, row: WorkflowInstance, revision_before: int, began: float) -> None:
        """The unit wrote ``row`` in one statement that took its lock and committed
        (``began``: when it was sent)."""
        self.locked_at, self.committed_at, self.path = began, time.perf_counter(), "at_once"
        self.workflow = self.workflow or row.workflow
        self.revision_before = revision_before

    @property
    def happened(self) -> bool:
        """Whether the unit did something to record: it ran the engine, created an instance
        or raised (a busy tree left to the next sweep, or a report that gave way, did not)."""
        return self.error is not None or self.applied is not None or self.created is not None

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
        """The target's row as the unit left it (a create's new one)."""
        return self.applied.instance if self.applied is not None else self.created

    @property
    def revision_after(self) -> int | None:
        row = self.instance
        return row.revision if row is not None else None

    @property
    def effects(self) -> tuple[Any, ...]:
        return tuple(self.applied.outcome.effects) if self.applied is not None else ()

    @property
    def seconds(self) -> float:
        return (self.ended or time.perf_counter()) - self.started

    @property
    def lock_held(self) -> float | None:
        """From the row lock to the commit; None when no lock was held or it rolled back."""
        if self.locked_at is None or self.committed_at is None:
            return None
        return self.committed_at - self.locked_at


@dataclass(frozen=True)
class SweepTurnReport:
    """One turn of the sweep: when it began and ended (ns since the epoch) and what it did
    (a ``SweepReport``: its units were reported one by one, each with this turn's start)."""

    started_ns: int
    ended_ns: int
    done: Any


# -- the subscribers ---------------------------------------------------------------------

_subscribers: tuple[Any, ...] = ()


def watched() -> bool:
    """Whether anyone subscribes: when not, a unit of work records nothing."""
    return bool(_subscribers)


def subscribers() -> tuple[Any, ...]:
    return _subscribers


def configure() -> None:
    """The subscribers the settings name (at start-up, and when the setting changes)."""
    global _subscribers
    if not isinstance(workflow_settings.user_settings, dict):  # check E010 says so
        _subscribers = ()
        return
    paths = list(workflow_settings.OBSERVERS or ())
    if workflow_settings.METRICS:
        paths.append(METRICS_OBSERVER)
    if workflow_settings.TRACING:
        paths.append(TRACING_OBSERVER)
    found = []
    for path in dict.fromkeys(paths):
        # An extra that is missing is check E060 or E061 (E062 for a path that does not
        # import), not a traceback at start-up.
        with suppress(ImportError):
            found.append(import_string(path)())
    _subscribers = tuple(found)


def use(observers: Sequence[Any]) -> None:
    """These observers instead of the settings' (a benchmark, a test), until the setting
    changes or :func:`configure` runs again."""
    global _subscribers
    _subscribers = tuple(observers)


def _reconfigure(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:  # conf's own receiver, connected first, cleared its cache
        configure()


setting_changed.connect(_reconfigure)


def safely(call: Callable[..., Any], *args: Any) -> Any:
    """A subscriber's call: one that raises is logged, and never changes the work's result
    (the work has committed, or must go on)."""
    try:
        return call(*args)
    except Exception:
        logger.exception("Observer %r failed", call)
        return None


# -- units of work -----------------------------------------------------------------------


@contextmanager
def unit(kind: UnitKind, command: str, instance_id: str | None, *, workflow: str | None = None,
         detail: Any = None, fired: Deadline | None = None) -> Iterator[UnitReport | None]:
    """The report of the unit of work run in the block (None when nobody subscribes),
    published when it committed (:func:`after_commit`), else when the block ends."""
    if not _subscribers:
        yield None
        return
    report = UnitReport(kind, command, instance_id, workflow, detail, fired=fired,
                        turn=getattr(_turns, "started", None))
    try:
        yield report
    except BaseException as error:
        report.error = error
        raise
    finally:
        if not report.published:
            publish(report)


def after_commit(report: UnitReport | None) -> None:
    """Publish ``report`` when the transaction commits (at once outside one); call it before
    the unit's own work is handed to the runner after commit."""
    if report is not None:
        transaction.on_commit(lambda: publish(report, committed=True))


def publish(report: UnitReport, *, committed: bool = False) -> None:
    if report.published:
        return
    report.published = True
    if committed and report.committed_at is None:
        report.committed_at = time.perf_counter()
    report.ended = time.perf_counter()
    for subscriber in _subscribers:
        safely(subscriber.unit_done, report)


# -- the sweep ---------------------------------------------------------------------------

_turns = threading.local()


@contextmanager
def sweep_turn() -> Iterator[Callable[[Any], None]]:
    """A turn of the sweep: units of work in the block are reported as part of it, and its
    own report follows; the block calls what it yields with what the turn did."""
    if not _subscribers:
        yield lambda done: None
        return
    outer = getattr(_turns, "started", None)
    started = _turns.started = time.time_ns()
    done: list[Any] = []
    try:
        yield done.append
    finally:
        _turns.started = outer
        report = SweepTurnReport(started, time.time_ns(), done[0] if done else None)
        for subscriber in _subscribers:
            safely(subscriber.sweep_done, report)


__all__: Sequence[str] = ["SweepTurnReport", "UnitReport", "configure", "publish",
                          "subscribers", "sweep_turn", "unit", "use", "watched"]
