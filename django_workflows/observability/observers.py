"""Observers: what watches the services, above them (metrics, traces, your own).

The services call no observer. They hand out one typed report after each unit of work
(``services/reports.py``: :class:`~django_workflows.services.reports.UnitReport`, once it
committed) and one after each turn of the sweep; the observers the settings name
(``OBSERVERS``, and ``METRICS`` and ``TRACING`` for the app's own) subscribe to them. The
runner's worker, above the services too, brackets each attempt it runs
(:func:`attempt_run`), so that what the attempt's code does happens inside an observer's
span. An observer that raises is logged, and changes neither the work nor its result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models import Attempt
from ..services.reports import SweepTurnReport, UnitReport, safely, subscribers

if TYPE_CHECKING:
    from ..engine import AttemptOutcome
    from ..services.attempts import Claimed


class Observer:
    """An observer of the services; every method does nothing unless overridden.

    ``attempt`` may return a context manager, entered around the attempt a worker runs (a
    span made current there is the parent of what the attempt's code does); the other
    methods are called once the work ended.
    """

    def unit_done(self, report: UnitReport) -> None:
        """A unit of work ended: committed (then first of what runs after the commit, before
        its new work goes to the runner), or without a commit."""

    def sweep_done(self, report: SweepTurnReport) -> None:
        """A turn of the sweep ended (its units were reported one by one, with its start)."""

    def attempt(self, run: AttemptRun) -> AbstractContextManager[Any] | None:
        return None

    def attempt_done(self, run: AttemptRun) -> None:
        pass


def _enter(around: ExitStack, manager: AbstractContextManager[Any] | None) -> None:
    if manager is not None:
        safely(around.enter_context, manager)


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
    observers = subscribers()
    record = AttemptRun(claimed)
    with ExitStack() as around:
        for observer in observers:
            _enter(around, safely(observer.attempt, record))
        try:
            record.outcome, record.accepted = run()
        except BaseException as error:
            record.error = error
            raise
        finally:
            record.ended = time.perf_counter()
            for observer in observers:
                safely(observer.attempt_done, record)
