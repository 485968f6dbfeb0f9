"""Running background work: what a token names, and running it in a worker.

This is the worker's side. It runs user code without any lock and reports an
:class:`AttemptOutcome`; the engine decides, under the lock, whether the
result still counts. Progress and log lines go to an :class:`AttemptSink`,
coalesced, so a busy operation writes at most once per ``flush_interval``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from . import durable
from .bounds import FLUSH_LINES, MAX_LOGS
from .commands import AttemptOutcome
from .context import HookContext, resolve
from .definition import Branch, Operation, Step, Task, Workflow, in_seconds
from .errors import (
    Cancelled,
    OperationBlockedError,
    OperationTimeoutError,
    StaleOperation,
    error_message,
    error_name,
)
from .journal import JournalStore, ReplayMismatch, Suspend, Suspension
from .messages import CANCELLED, missing_key, operation_timed_out, step_hook
from .snapshot import (
    AttemptKind,
    ErrorInfo,
    OperationSnapshot,
    Progress,
    RollbackItem,
    WorkflowSnapshot,
    new_operation_snapshot,
)


class AttemptSink(Protocol):
    """Where a running attempt reports, and how it learns it should stop."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def stop_reason(self) -> str | None: ...

    def report(self, *, status: str | None, progress: Progress | None,
               logs: list[str]) -> None: ...


@dataclass(frozen=True)
class Work:
    """The background work a token names, found in an instance's snapshot."""

    kind: AttemptKind
    token: str
    definition: Workflow
    snapshot: WorkflowSnapshot  # the instance the work belongs to
    attempt: int = 1
    operation: Operation | None = None
    branch: Branch | None = None
    item: RollbackItem | None = None


def unclaimed_tokens(root: WorkflowSnapshot) -> list[tuple[str, str]]:
    """``(instance id, token)`` of the work the tree handed out and no claim is recorded for.

    A worker's claim may be recorded only on its attempt's row; the service
    looks there for these and reports them with ``claimed=`` to :func:`apply`.
    """
    found = []
    for node in root.tree():
        found += [(node.id, op.token) for op in node.operations
                  if op.status == "queued" and op.token]
        found += [(node.id, b.token) for b in node.parallel
                  if b.status == "running" and b.token and not b.claimed]
        if node.rollback is not None:
            found += [(node.id, i.token) for i in node.rollback.items
                      if i.status == "running" and i.token and not i.claimed]
    return found


def find_work(definitions: dict[str, Workflow], root: WorkflowSnapshot, token: str
              ) -> Work | None:
    """The work ``token`` names in the tree rooted at ``root``; None when it is stale."""
    for node in root.tree():
        definition = definitions[node.id]
        for op in node.operations:
            if op.token == token and op.status in ("queued", "running", "retrying"):
                found = definition.find_operation(op.id)
                return Work("operation", token, definition, node, op.attempt, operation=found) \
                    if found else None
        for entry in node.parallel:
            if entry.token == token and entry.status == "running":
                step = definition.steps_by_id.get(entry.step)
                branch = next((b for b in step.branches if b.id == entry.id), None) \
                    if step else None
                return Work("branch", token, definition, node, branch=branch) if branch else None
        if node.rollback is not None:
            for item in node.rollback.items:
                if item.token == token and item.status == "running":
                    return Work("compensation", token, definition, node, item=item)
    return None


class OperationContext(HookContext):
    """What ``Operation.run(ctx)`` receives: progress, logs, children, blocking, and
    durable code (``step``, ``sleep``, ``sleep_until``, ``wait_for_signal``, ``ask``)."""

    def __init__(self, *, sink: AttemptSink, attempt: int, snapshot: WorkflowSnapshot,
                 workflow: str, step: str | None, user: Any = None,
                 timeout: float | None = None, flush_interval: float = 1.0,
                 max_logs: int = MAX_LOGS, parent: OperationContext | None = None,
                 replay: durable.Replay | None = None, asynchronous: bool = False) -> None:
        super().__init__(state=snapshot.state, instance_id=snapshot.id, workflow=workflow,
                         step=step, user=user, stop_reason=self._reason)
        self._parent = parent
        # ``async def`` code: its durable calls answer awaitables. Told by its ``run``, not
        # by a running event loop: plain code may run in a thread that has one (Jupyter).
        self.asynchronous = asynchronous
        # ``ctx.step``: the step's id, as a hook's, that is also durable code's call.
        self.step: durable.StepCall = durable.StepCall(step or "", self)
        # A child's steps are the same journal's, at the positions that follow.
        self.replay: durable.Replay = replay or (
            parent.replay if parent is not None
            else durable.Replay(None, None, woken=None, durable=False, operation=None))
        self.attempt = attempt
        self.children: list[OperationSnapshot] = []
        self.last_progress: Progress | None = None
        self.logs: list[str] = []
        self._snapshot = snapshot
        self._sink = sink
        self._deadline = sink.now() + timeout if timeout else None
        self._timeout = timeout
        self._flush_interval = flush_interval
        self._max_logs = max_logs
        self._unflushed: list[str] = []
        self._progress_dirty = False
        self._status: str | None = None
        self._last_flush = sink.now()
        self._closed = False

    def _reason(self) -> str | None:
        if self._deadline is not None and self._sink.now() >= self._deadline:
            return operation_timed_out(self._timeout)
        if self._parent is None:
            return self._sink.stop_reason()
        if self._parent._closed:  # the attempt that started this child ended: it stops too
            return CANCELLED
        return self._parent._reason()

    def check_cancelled(self) -> None:
        reason = self._reason()
        if reason is not None and reason.startswith("Operation timed out"):
            raise OperationTimeoutError(reason)
        super().check_cancelled()

    # -- reporting ----------------------------------------------------------

    def progress(self, current: float, total: float | None = None,
                 message: str | None = None) -> None:
        if self._closed:
            return  # a finished attempt reports nothing more
        self.last_progress = Progress(current, total, message)
        self._progress_dirty = True
        self._flush()

    def log(self, line: str) -> None:
        if self._closed:
            return
        self.logs.append(str(line))
        if len(self.logs) > self._max_logs:
            del self.logs[:len(self.logs) - self._max_logs]
        self._unflushed.append(str(line))
        self._flush(force=len(self._unflushed) >= FLUSH_LINES)

    def _flush(self, force: bool = False) -> None:
        if not (force or self._sink.now() - self._last_flush >= self._flush_interval):
            return
        if self._unflushed or self._progress_dirty or self._status:
            self._sink.report(status=self._status,
                              progress=self.last_progress if self._progress_dirty else None,
                              logs=self._unflushed)
        self._unflushed = []
        self._progress_dirty = False
        self._status = None
        self._last_flush = self._sink.now()

    def close(self) -> None:
        """Flush what is left and fence the context: later calls report nothing."""
        if not self._closed:
            self._flush(force=True)
            self._closed = True

    # -- control ------------------------------------------------------------

    def block(self, message: str) -> None:
        """Stop: the workflow is ``blocked`` with ``message`` until the state changes."""
        raise OperationBlockedError(message)

    def now(self) -> float:
        return self._sink.now()

    def pause(self, seconds: float) -> None:
        """Wait in this worker, but stop at once (raising) when the work is told to stop."""
        end = self._sink.now() + seconds
        while (left := end - self._sink.now()) > 0:
            self.check_cancelled()
            self._sink.sleep(min(left, 0.2))
        self.check_cancelled()

    # -- durable code (engine/durable.py; docs/durable-code.md) -------------------------

    def run_step(self, name: str, fn: Callable[..., Any], /, *args: Any, retries: int = 0,
                 retry_delay: float = 1.0, backoff: float = 2.0, **kwargs: Any) -> Any:
        """``ctx.step(name, fn, ...)``: see :class:`~.durable.StepCall`."""
        if self._closed:
            raise StaleOperation()
        if self.asynchronous:
            return durable.astep(self, name, fn, args, kwargs, retries, retry_delay, backoff)
        return durable.step(self, name, fn, args, kwargs, retries, retry_delay, backoff)

    def sleep(self, duration: float | timedelta) -> Any:
        """Wait ``duration``. Durable code waits without its worker (the attempt ends,
        and the next one replays to here); other code waits in the worker, stopping
        at once (raising) when the work is told to stop."""
        seconds = durable.seconds_of(duration, "ctx.sleep")
        if not self.replay.durable:
            return self.pause(seconds)
        return self.sleep_until(self.now() + seconds)

    def sleep_until(self, when: datetime | float) -> Any:
        """Durable code: wait without a worker until ``when`` (an aware datetime)."""
        until = durable.until_of(when, "ctx.sleep_until")
        return self._answer(lambda: durable.wait(
            self, "sleep", "sleep", lambda at: Suspension("timer", at, "sleep", until),
            lambda value: None))

    def wait_for_signal(self, name: str, *, timeout: float | timedelta | None = None) -> Any:
        """Durable code: wait without a worker for the operation's signal ``name``; its
        payload. Past ``timeout`` (default: the signal's own), raise ``WaitTimedOut``
        (or return None, with the signal's ``on_timeout="continue"``)."""
        operation = self.replay.operation
        declared = operation.signal(name) if operation is not None else None
        if declared is None:
            raise ValueError(f'Operation "{operation.id if operation else ""}" declares no '
                             f'signal "{name}": add Signal("{name}", ...) to its signals')
        seconds = in_seconds(declared.timeout) if timeout is None \
            else durable.seconds_of(timeout, "ctx.wait_for_signal timeout")
        until = self.now() + seconds if seconds else None
        return self._answer(lambda: durable.wait(
            self, "signal", name, lambda at: Suspension("signal", at, name, until),
            durable.signal_value(name, declared.on_timeout)))

    def ask(self, task: Task) -> Any:
        """Durable code: open ``task`` for a person and wait without a worker; the
        decision (a ``task.form`` model instance when the form is a pydantic model)."""
        title = task.title or (self.replay.operation.title if self.replay.operation else "")
        return self._answer(lambda: durable.wait(
            self, "task", title or "task",
            lambda at: Suspension("task", at, title or "task",
                                  task=durable.task_spec(self, task)),
            durable.decision_of(task)))

    def patched(self, patch: str) -> Any:
        """Whether this run of durable code takes the new path of a change named ``patch``:
        True for a run that reaches here after the change (recorded in its journal), False
        for the replay of one that passed here before it. ``if ctx.patched("per-line"):
        new code else: old code``, until no run from before the change is left."""
        return self._answer(lambda: self.replay.patched(patch), writes=True)

    def _answer(self, call: Callable[[], Any], *, writes: bool = False) -> Any:
        """``call()``, or, in ``async def`` code, an awaitable of it (the journal is read
        in a thread: a database is not used from an event loop). ``writes``: the call may
        record an entry (a patch) even when no wait was woken, so it runs in a thread."""
        if self._closed:
            raise StaleOperation()
        if not self.asynchronous:
            return call()

        async def answer() -> Any:
            await self.replay.in_thread(self.replay.load)
            return await self.replay.in_thread(call) if writes or self.replay.woken else call()
        return answer()

    def wait_for(self, awaitable: Any) -> Any:
        """Wait for a callable or awaitable with the operation shown as ``waiting``."""
        if self._closed:
            raise StaleOperation()
        self._status = "waiting"
        self._flush(force=True)
        try:
            return resolve(awaitable() if callable(awaitable) else awaitable)
        finally:
            self._status = "running"
            self._flush(force=True)

    def run_child(self, operation: Operation) -> Any:
        """Run another operation, with its own retries, as part of this attempt."""
        if self._closed:
            raise StaleOperation()
        fresh = new_operation_snapshot(operation, self.step or "")
        last_error: BaseException | None = None
        for attempt in range(1, operation.max_attempts + 1):
            self.check_cancelled()
            if attempt > 1:
                self.pause(operation.delay_before(attempt))
            now = self._sink.now()
            child = OperationContext(
                sink=self._sink, attempt=attempt, snapshot=self._snapshot,
                workflow=self.workflow, step=self.step, user=self.user,
                timeout=in_seconds(operation.timeout), flush_interval=self._flush_interval,
                max_logs=operation.max_logs, parent=self,
                asynchronous=inspect.iscoroutinefunction(operation.run))
            try:
                value = run_user_code(operation.run, child)
            except (OperationBlockedError, Cancelled, ReplayMismatch):
                child.close()
                raise
            except Exception as error:
                child.close()
                last_error = error
                if self._reason() is not None:
                    self.check_cancelled()
                continue
            child.close()
            self.children.append(replace(
                fresh, status="succeeded", attempt=attempt, progress=child.last_progress,
                started_at=now, completed_at=self._sink.now(), result=value,
                children=tuple(child.children), logs=tuple(child.logs)))
            return value
        assert last_error is not None
        raise last_error


def run_user_code(run: Callable[..., Any], ctx: OperationContext, *args: Any) -> Any:
    """Call ``run`` and return its JSON result; a late finish past the deadline times out."""
    value = resolve(run(*args, ctx))
    ctx.check_cancelled()  # finished, but after it was told to stop: the result does not count
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as error:
        raise TypeError(f"Operation result is not JSON serialisable: {error}") from None


def _failure(error: BaseException, what: str) -> ErrorInfo:
    """How user code failed; ``what`` names it where its message does not (a KeyError)."""
    return ErrorInfo(error_name(error), missing_key(what, error) or error_message(error))


def execute(work: Work, sink: AttemptSink, *, user: Any = None, flush_interval: float = 1.0,
            journal: JournalStore | None = None) -> AttemptOutcome:
    """Run the work of one attempt and say how it ended. Never raises for user errors.

    ``journal``: where the operation's durable code keeps its steps (in memory if None).
    """
    snapshot = work.snapshot
    if work.kind == "operation":
        assert work.operation is not None
        operation = work.operation
        current = snapshot.operation(operation.id)
        # A journal is named after the first token of its run (rules/work.py: queue_attempt),
        # so the attempt holding that token is the run's first: nothing was recorded yet.
        first = current is not None and current.journal == work.token
        replay = durable.Replay(journal, current.journal if current else None,
                                woken=current.woken if current else None,
                                durable=operation.durable, operation=operation, empty=first)
        ctx = OperationContext(sink=sink, attempt=work.attempt, snapshot=snapshot,
                               workflow=work.definition.id,
                               step=current.step if current else None, user=user,
                               timeout=in_seconds(operation.timeout),
                               flush_interval=flush_interval,
                               max_logs=operation.max_logs, replay=replay,
                               asynchronous=inspect.iscoroutinefunction(operation.run))
        try:
            value = run_user_code(operation.run, ctx)
        except Suspend as suspended:
            ctx.close()
            return AttemptOutcome(ok=False, suspension=suspended.suspension,
                                  logs=tuple(ctx.logs), progress=ctx.last_progress)
        except Exception as error:
            ctx.close()
            failure = _failure(error, f'The operation "{operation.id}"')
            return AttemptOutcome(ok=False, error=failure, logs=tuple(ctx.logs),
                                  progress=ctx.last_progress)
        finally:
            replay.close()
        ctx.close()
        return AttemptOutcome(ok=True, value=value, children=tuple(ctx.children),
                              logs=tuple(ctx.logs), progress=ctx.last_progress)
    if work.kind == "branch":
        assert work.branch is not None
        entry = next(b for b in snapshot.parallel if b.token == work.token)
        hook_ctx = HookContext(state=snapshot.state, instance_id=snapshot.id,
                               workflow=work.definition.id, step=entry.step, user=user,
                               stop_reason=sink.stop_reason)
        # Its errors are shown as 'Branch "<id>": <message>'.
        return _call(work.branch.run, hook_ctx, what="The branch")
    assert work.item is not None
    return _compensate(work, sink, user, flush_interval)


def _call(hook: Callable[..., Any], *args: Any, what: str, keep: bool = False
          ) -> AttemptOutcome:
    """Call a branch or a compensation; ``keep``: what it returned is its record (a
    compensation's: a refund's id), as JSON, or as text when it is no JSON."""
    try:
        value = resolve(hook(*args))
    except Exception as error:
        return AttemptOutcome(ok=False, error=_failure(error, what))
    if not keep or value is None:
        return AttemptOutcome(ok=True)
    try:
        return AttemptOutcome(ok=True, value=json.loads(json.dumps(value)))
    except (TypeError, ValueError):
        return AttemptOutcome(ok=True, value=str(value))


def _compensate(work: Work, sink: AttemptSink, user: Any, flush_interval: float
                ) -> AttemptOutcome:
    item = work.item
    assert item is not None
    definition, snapshot = work.definition, work.snapshot
    hook_ctx = HookContext(state=snapshot.state, instance_id=snapshot.id,
                           workflow=definition.id, step=item.step, user=user,
                           stop_reason=sink.stop_reason)
    if item.kind == "branch":
        step: Step = definition.step(item.step or "")
        branch = next((b for b in step.branches if b.id == item.target), None)
        if branch is None or branch.compensate is None:
            return AttemptOutcome(ok=True)
        return _call(branch.compensate, hook_ctx, keep=True,
                     what=f'The compensate hook of branch "{branch.id}"')
    if item.kind == "step":
        step = definition.step(item.target)
        return _call(step.compensate, hook_ctx, keep=True,
                     what=step_hook("compensate", step.id)) \
            if step.compensate else AttemptOutcome(ok=True)
    # An operation (or a child of one): rollback(last result, ctx).
    found = _operation_snapshot(snapshot, item)
    operation = definition.find_operation(item.target)
    if operation is None or operation.rollback is None:
        return AttemptOutcome(ok=True)
    ctx = OperationContext(sink=sink, attempt=found.attempt if found else 0, snapshot=snapshot,
                           workflow=definition.id, step=item.step, user=user,
                           flush_interval=flush_interval,
                           asynchronous=inspect.iscoroutinefunction(operation.rollback))
    outcome = _call(operation.rollback, found.result if found else None, ctx, keep=True,
                    what=f'The rollback of operation "{operation.id}"')
    ctx.close()
    return outcome


def _operation_snapshot(snapshot: WorkflowSnapshot, item: RollbackItem
                        ) -> OperationSnapshot | None:
    ids = (*item.path, item.target)
    candidates = snapshot.operations
    found = None
    for operation_id in ids:
        found = next((op for op in candidates if op.id == operation_id), None)
        if found is None:
            return None
        candidates = found.children
    return found
