"""Helpers for testing your own workflows, with the database and without workers.

::

    from django_workflows.testing import WorkflowTester

    def test_order_times_out(db):
        with WorkflowTester() as wf:
            order = wf.create("order", state={"sku": "A1"}, start=True)
            wf.advance(60)                       # the step timeout fires
            assert wf.reload(order).status == "failed"
            wf.assert_events(order, ["start", "step-enter", "error"], contains=True)

Inside the block, background work runs at once in this process (the
immediate runner), even inside a test's transaction, and time is a fake clock
that moves only when you call :meth:`WorkflowTester.advance`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import Any, Generic, ParamSpec, TypeVar

from django.test import TestCase, override_settings

from .. import clock, services
from ..conf import IMMEDIATE_RUNNER, workflow_settings
from ..models import Deadline, WorkflowEvent, WorkflowInstance
from .clock import FakeClock

P = ParamSpec("P")
R = TypeVar("R")


class _Given(Generic[P]):
    """A service function as the tester gives it: as its user by default, the work it
    hands out run at once. Typed as the service function is."""

    def __init__(self, function: Callable[P, WorkflowInstance]) -> None:
        self.function = function
        self.__doc__ = function.__doc__

    def __get__(self, tester: WorkflowTester | None, owner: type | None = None
                ) -> Callable[P, WorkflowInstance]:
        if tester is None:
            return self.function
        function = self.function

        def given(*args: P.args, **kwargs: P.kwargs) -> WorkflowInstance:
            return tester._call(function, *args, **kwargs)

        return given


class WorkflowTester:
    """Drives instances in tests: commands, fake time, running work, event checks."""

    def __init__(self, *, user: Any = None, start: float | datetime | None = None) -> None:
        self.user = user
        self.clock = FakeClock(start)
        self._stack: ExitStack | None = None

    def __enter__(self) -> WorkflowTester:
        self._stack = ExitStack()
        current = dict(getattr(workflow_settings, "user_settings", {}) or {})
        self._stack.enter_context(
            override_settings(DJANGO_WORKFLOWS={**current, "RUNNER": IMMEDIATE_RUNNER}))
        clock.use(self.clock.now)
        self._stack.callback(clock.use, None)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        assert self._stack is not None
        self._stack.close()
        self._stack = None

    @contextmanager
    def _running_work(self) -> Iterator[None]:
        """Run what commands hand to the runner, even inside a test's transaction."""
        with TestCase.captureOnCommitCallbacks(execute=True):
            yield

    def _call(self, function: Callable[..., R], *args: Any, **options: Any) -> R:
        options.setdefault("user", self.user)
        with self._running_work():
            return function(*args, **options)

    # -- commands -----------------------------------------------------------

    def create(self, workflow: str, *, state: dict[str, Any] | None = None,
               start: bool = False, **options: Any) -> WorkflowInstance:
        return self._call(services.create, workflow, state=state, start=start, **options)

    def command(self, instance: Any, name: str, *args: Any, **options: Any) -> WorkflowInstance:
        """Give a command by name; a refusal raises ``WorkflowNotMoved`` as usual."""
        return self._call(services.command, instance, name, *args, **options)

    # One per declared command (``services/functions.py``): ``wf.cancel(order, reason=...)``.
    start = _Given(services.start)
    next = _Given(services.next)
    back = _Given(services.back)
    rewind = _Given(services.rewind)
    skip = _Given(services.skip)
    skip_operation = _Given(services.skip_operation)
    validate = _Given(services.validate)
    retry = _Given(services.retry)
    pause = _Given(services.pause)
    resume = _Given(services.resume)
    cancel = _Given(services.cancel)
    rollback = _Given(services.rollback)
    update_state = _Given(services.update_state)
    claim = _Given(services.claim)
    release = _Given(services.release)
    complete = _Given(services.complete)

    # -- time ---------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the clock, firing every deadline that falls due on the way, in order."""
        end = self.clock.time + seconds
        while True:
            due = Deadline.objects.filter(due_at__lte=_as_datetime(end)).order_by("due_at")
            first = due.values_list("due_at", flat=True).first()
            if first is None:
                break
            self.clock.time = max(self.clock.time, first.timestamp())
            with self._running_work():
                services.sweep(now=_as_datetime(self.clock.time))
        self.clock.time = end

    def run_until_settled(self, instance: Any, *, max_seconds: float = 7 * 24 * 3600) -> None:
        """Fire the instance's deadlines (retry delays, timeouts) until none is left."""
        end = self.clock.time + max_seconds
        ids = self._tree_ids(instance)
        while True:
            first = (Deadline.objects.filter(instance_id__in=ids).order_by("due_at")
                     .values_list("due_at", flat=True).first())
            if first is None or first.timestamp() > end:
                return
            self.advance(max(first.timestamp() - self.clock.time, 0))
            ids = self._tree_ids(instance)

    def run_to_completion(self, instance: Any, *, tasks: Mapping[str, Any] | None = None,
                          max_moves: int = 1000) -> WorkflowInstance:
        """Start it if need be, then ``next`` and wait out deadlines until it completes.

        ``tasks`` gives the input of each step's task by step id
        (``{"approval": {"decision": "approved"}}``): an open task is completed with
        it, as trusted code (no user). Raises AssertionError naming the status and
        errors when it gets stuck (blocked, failed, cancelled, or a task without an
        input) instead.
        """
        current = self.reload(instance)
        if current.status == "idle":
            current = self.start(current)
        for _ in range(max_moves):
            self.run_until_settled(current)
            current = self.reload(current)
            if current.status == "completed":
                return current
            if current.status != "running":
                raise AssertionError(f"Instance {current.pk} of {current.workflow!r} stopped "
                                     f"{current.status!r} at step {current.current_step!r}: "
                                     f"{current.errors}")
            task = current.snap.open_task
            if task is None:
                current = self.next(current)
            elif tasks is not None and task.step in tasks:
                current = self.complete(current, input=tasks[task.step], user=None)
            else:
                raise AssertionError(f"Instance {current.pk} of {current.workflow!r} waits "
                                     f'for its task "{task.title}" at step {task.step!r}: '
                                     f"give its input, run_to_completion(tasks="
                                     f"{{{task.step!r}: {{...}}}})")
        raise AssertionError(f"Instance {current.pk} did not complete in {max_moves} moves")

    # -- reading ------------------------------------------------------------

    def reload(self, instance: Any) -> WorkflowInstance:
        return WorkflowInstance.objects.get(pk=getattr(instance, "pk", instance))

    def events(self, instance: Any) -> list[str]:
        """The instance's event types, oldest first."""
        return list(WorkflowEvent.objects.filter(instance_id=getattr(instance, "pk", instance))
                    .order_by("sequence").values_list("type", flat=True))

    def assert_events(self, instance: Any, expected: Sequence[str], *,
                      contains: bool = False) -> None:
        """The event types are exactly ``expected`` (or contain it in order, ``contains``)."""
        actual = self.events(instance)
        if contains:
            remaining = iter(actual)
            missing = [kind for kind in expected if kind not in remaining]
            if missing:
                raise AssertionError(f"Events {actual} do not contain {list(expected)} in "
                                     f"order (missing from {missing[0]!r})")
        elif actual != list(expected):
            raise AssertionError(f"Events {actual} != {list(expected)}")

    def _tree_ids(self, instance: Any) -> list[Any]:
        """The instance's id and those of its children, their children, and so on."""
        ids = level = [getattr(instance, "pk", instance)]
        while level:
            level = list(WorkflowInstance.objects.filter(parent_id__in=level)
                         .values_list("pk", flat=True))
            ids = [*ids, *level]
        return ids


def _as_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)
