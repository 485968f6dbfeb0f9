"""Durable code waiting: an operation whose code waits, and what wakes it.

An attempt that ends with a :class:`~..journal.Suspension` leaves its operation
``suspended`` (in flight, with no attempt out) and the instance waits as a step
waits: a timer or a signal in its ``waiting`` (which names the operation), a
task in its ``task``. The timer's deadline, the signal or the task's completion
wakes it: ``woken`` records what ended the wait and a new attempt is queued,
whose replay goes on from there. Whatever ends a step's work (cancel, back,
skip, the step's timeout, rollback) ends the wait as it ends a task.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..change import Change
from ..definition import Operation
from ..errors import Refused
from ..journal import Suspension
from ..outcome import ClearDeadline, SetDeadline, TakeSignal
from ..snapshot import ErrorInfo, OperationSnapshot, TaskSnapshot, WaitSnapshot
from ..waits import Signal
from .work import cancel_task, put_operation, put_task, queue_attempt

JOURNAL_KIND = {"timer": "sleep", "signal": "signal", "task": "task"}


def suspend(c: Change, operation: OperationSnapshot, definition: Operation,
            suspension: Suspension) -> None:
    """The attempt of ``operation`` ended for its code to wait (``suspension``)."""
    now, step = c.env.now, operation.step
    put_operation(c, replace(operation, status="suspended", token=None, retry_at=None,
                             journaled=suspension.position))
    token = c.new_token()
    if suspension.kind == "timer":
        until = suspension.until if suspension.until is not None else now
        waiting = WaitSnapshot("timer", step, token, now, until=until,
                               operation=operation.id, position=suspension.position)
        c.set(waiting=waiting)
        c.emit("timer-wait", step=step, until=until, operation=operation.id)
        if until <= now:  # its time came already: no need to wait for the sweep
            wake(c, waiting, None)
        else:
            c.effect(SetDeadline(c.snap.id, "timer", token, until))
    elif suspension.kind == "signal":
        wait_for_signal(c, operation, definition, suspension, token)
    else:
        ask(c, operation, suspension, token)


def wait_for_signal(c: Change, operation: OperationSnapshot, definition: Operation,
                    suspension: Suspension, token: str) -> None:
    signal = definition.signal(suspension.name)
    if signal is None:  # the worker checks it too: a definition changed under the code
        _fail(c, operation, f'Operation "{operation.id}" declares no signal '
                            f'"{suspension.name}"')
        return
    correlation = None
    if signal.correlate is not None:
        value = c.run_hook(signal.correlate, c.context(), step=operation.step,
                           what=f'The correlate hook of signal "{signal.name}"')
        correlation = None if value is None else str(value)
    waiting = WaitSnapshot("signal", operation.step, token, c.env.now, name=signal.name,
                           correlation=correlation, until=suspension.until,
                           operation=operation.id, position=suspension.position)
    c.set(waiting=waiting)
    c.emit("signal-wait", step=operation.step, signal=signal.name, correlation=correlation,
           until=waiting.until, operation=operation.id)
    if waiting.until is not None:
        c.effect(SetDeadline(c.snap.id, "signal-timeout", token, waiting.until))
    kept = c.env.kept_signal(c.snap.id, operation.step, signal.name, correlation)
    if kept is None:
        return
    problems = signal.payload_problems(kept.payload)
    if problems:
        c.effect(TakeSignal(c.snap.id, kept.id, "refused", "; ".join(map(str, problems))))
        return
    c.effect(TakeSignal(c.snap.id, kept.id))
    signal_came(c, signal, kept.payload, message_id=kept.message_id, sender=kept.sender,
                kept=True)


def signal_came(c: Change, signal: Signal, payload: Any, *, message_id: str | None,
                sender: str | None, kept: bool = False) -> None:
    """The signal the code waits for came: the code goes on with its payload."""
    waiting = c.snap.waiting
    assert waiting is not None
    if waiting.until is not None:
        c.effect(ClearDeadline(c.snap.id, waiting.token))
    data: dict[str, Any] = {"signal": signal.name, "payload": payload, "sender": sender,
                            "message_id": message_id, "operation": waiting.operation}
    if kept:
        data["kept"] = True
    c.emit("signal", step=waiting.step, **data)
    wake(c, waiting, payload)


def payload_refusal(signal: Signal, payload: Any) -> Refused | None:
    problems = signal.payload_problems(payload)
    return Refused("invalid_payload", "; ".join(map(str, problems)), problems) \
        if problems else None


def ask(c: Change, operation: OperationSnapshot, suspension: Suspension, token: str) -> None:
    """Open the task the code asks; its decision wakes the code."""
    asked = dict(suspension.task or {})
    due_in = asked.get("due")
    due = c.env.now + due_in if due_in else None
    task = TaskSnapshot(id=c.env.new_id(), step=operation.step,
                        title=str(asked.get("title") or operation.title or operation.id),
                        candidates=tuple(asked.get("candidates") or ()),
                        exclude_owner=bool(asked.get("exclude_owner")), opened_at=c.env.now,
                        due_at=due, operation=operation.id, position=suspension.position,
                        asked=asked)
    put_task(c, task, opened=True)
    c.emit("task-open", step=operation.step, candidates=list(task.candidates), **task.named)
    if due is not None:
        c.effect(SetDeadline(c.snap.id, "task-due", task.id, due))


def decided(c: Change, task: TaskSnapshot, value: Any) -> None:
    """The task the code asked was completed with ``value``: the code goes on."""
    operation = c.snap.operation(task.operation or "")
    if operation is None or operation.status != "suspended":
        return
    _queue_woken(c, operation, {"position": task.position, "kind": "task",
                                "name": task.title, "value": value, "timed_out": False,
                                "since": task.opened_at})


def wake(c: Change, waiting: WaitSnapshot, value: Any, *, timed_out: bool = False) -> None:
    """The timer or the signal the code waited for came: a new attempt replays to it."""
    c.set(waiting=None)
    operation = c.snap.operation(waiting.operation or "")
    if operation is None or operation.status != "suspended":
        return
    kind = "sleep" if waiting.kind == "timer" else "signal"
    name = "sleep" if waiting.kind == "timer" else waiting.name
    _queue_woken(c, operation, {"position": waiting.position, "kind": kind, "name": name,
                                "value": value, "timed_out": timed_out,
                                "since": waiting.since})


def _queue_woken(c: Change, operation: OperationSnapshot, woken: dict[str, Any]) -> None:
    definition = c.definition.find_operation(operation.id)
    assert definition is not None
    queue_attempt(c, replace(operation, woken=woken), definition, operation.attempt)


def end_wait_of(c: Change, operation: OperationSnapshot, reason: str) -> None:
    """``operation``'s code no longer waits (it is cancelled): its timer, signal or task
    goes, as a step's does when the step is left."""
    from .waits import end_wait  # waits.py hands its operation's signals to this module

    waiting = c.snap.waiting
    if waiting is not None and waiting.operation == operation.id:
        end_wait(c)
    task = c.snap.open_task
    if task is not None and task.operation == operation.id:
        cancel_task(c, reason)


def _fail(c: Change, operation: OperationSnapshot, message: str) -> None:
    from .results import operation_failed

    operation_failed(c, replace(c.snap.operation(operation.id) or operation,
                                error=ErrorInfo("DefinitionError", message)))


__all__ = ["ask", "decided", "end_wait_of", "payload_refusal", "signal_came", "suspend",
           "wake"]
