"""Waiting for the world outside: a step that waits for a signal or for a time.

Entering a step with ``wait=Signal(...)`` records what it waits for
(``signal-wait``, with its correlation, evaluated once) and, with a timeout,
sets a deadline; a signal kept for it before it waited is taken at once. The
signal (``ReceiveSignal``) stores its payload under the signal's key and the
step moves on as ``next`` would: validated, then left, in the same command.
``Timer`` sets its deadline on entry (``timer-wait``); when it falls due
(``timer-fire``) the step moves on the same way. While the step waits, ``next``
is refused (``signal_awaited``, ``timer_pending``). ``skip``, ``back``, ``cancel``
and ``rollback`` end the wait as they end a task. The moving on is
``rules/steps.py: advance``, once the wait has ``arrived``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..change import Change
from ..definition import Step, in_seconds
from ..errors import Refused
from ..messages import signal_timed_out, step_hook
from ..outcome import ClearDeadline, SetDeadline, TakeSignal
from ..schema import check_state
from ..snapshot import MOVING, WaitSnapshot
from ..waits import Signal, Timer
from . import durable

if TYPE_CHECKING:
    from ..commands import ReceiveSignal


def begin_wait(c: Change, step: Step) -> None:
    """The step starts waiting for its signal or its time (its enter hook ran)."""
    end_wait(c)
    wait = step.wait
    token, now = c.new_token(), c.env.now
    if isinstance(wait, Signal):
        correlation = None
        if wait.correlate is not None:
            value = c.run_hook(wait.correlate, c.context(), step=step.id,
                               what=f'The correlate hook of signal "{wait.name}"')
            correlation = None if value is None else str(value)
        timeout = in_seconds(wait.timeout)
        waiting = WaitSnapshot("signal", step.id, token, now, name=wait.name,
                               correlation=correlation,
                               until=now + timeout if timeout else None)
        c.set(waiting=waiting)
        c.emit("signal-wait", step=step.id, signal=wait.name, correlation=correlation,
               until=waiting.until)
        if waiting.until is not None:
            c.effect(SetDeadline(c.snap.id, "signal-timeout", token, waiting.until))
        kept = c.env.kept_signal(c.snap.id, step.id, wait.name, correlation)
        if kept is not None:
            try:
                state = state_with(c, wait, kept.payload)
            except Refused as refusal:
                c.effect(TakeSignal(c.snap.id, kept.id, "refused", refusal.message))
                return
            c.effect(TakeSignal(c.snap.id, kept.id))
            arrive(c, wait, state, message_id=kept.message_id, sender=kept.sender, kept=True)
    elif isinstance(wait, Timer):
        until, what = wait.until, step_hook("until", step.id)
        at = now + (in_seconds(wait.after) or 0.0) if until is None else c.run_hook(
            lambda ctx: _epoch(until(ctx), what), c.context(), step=step.id, what=what)
        c.set(waiting=WaitSnapshot("timer", step.id, token, now, until=at))
        c.emit("timer-wait", step=step.id, until=at)
        c.effect(SetDeadline(c.snap.id, "timer", token, at))


def end_wait(c: Change) -> None:
    """The step no longer waits (it is left, skipped, cancelled, rolled back, waits anew)."""
    waiting = c.snap.waiting
    if waiting is not None:
        if waiting.until is not None and waiting.arrived is None:
            c.effect(ClearDeadline(c.snap.id, waiting.token))
        c.set(waiting=None)


def receive(c: Change, command: ReceiveSignal) -> None:
    """A signal delivered to the instance: taken if the current step waits for it."""
    waiting = c.snap.waiting
    if (waiting is None or waiting.kind != "signal" or waiting.name != command.signal
            or waiting.arrived is not None or c.snap.status not in MOVING
            or (command.correlation is not None and waiting.correlation != command.correlation)):
        raise Refused("not_waiting", f'{c.name} is not waiting for the signal '
                                     f'"{command.signal}"')
    if waiting.operation is not None:  # an operation's durable code waits for it
        signal = _operation_signal(c, waiting)
        refusal = durable.payload_refusal(signal, command.payload)
        if refusal is not None:
            raise refusal
        c.checked()
        if command.signal_id is not None:
            c.effect(TakeSignal(c.snap.id, command.signal_id))
        durable.signal_came(c, signal, command.payload, message_id=command.message_id,
                            sender=command.sender)
        return
    wait = c.definition.step(waiting.step).wait
    assert isinstance(wait, Signal)
    state = state_with(c, wait, command.payload)
    c.checked()
    if command.signal_id is not None:
        c.effect(TakeSignal(c.snap.id, command.signal_id))
    arrive(c, wait, state, message_id=command.message_id, sender=command.sender)


def state_with(c: Change, wait: Signal, payload: Any) -> dict[str, Any]:
    """The state with ``payload`` under the signal's key, as the signal's schema and the
    workflow's ``state_schema`` take it (a task's input is checked the same way), or
    ``Refused("invalid_payload")`` naming each field."""
    problems = wait.payload_problems(payload)
    if problems:
        raise Refused("invalid_payload", "; ".join(map(str, problems)), problems)
    try:
        return check_state(c.definition.state_schema, {**c.snap.state, wait.key: payload})
    except Refused as refusal:
        raise Refused("invalid_payload", f"The payload breaks the workflow's state: "
                                         f"{refusal.message}", refusal.field_errors) from None


def arrive(c: Change, wait: Signal, state: dict[str, Any], *, message_id: str | None,
           sender: str | None, kept: bool = False) -> None:
    """The signal came: ``state`` holds its payload (``state_with``); the step may move on."""
    waiting = c.snap.waiting
    assert waiting is not None
    if waiting.until is not None:
        c.effect(ClearDeadline(c.snap.id, waiting.token))
    payload = state[wait.key]
    c.set(state=state, waiting=replace(waiting, arrived=c.env.now))
    data: dict[str, Any] = {"signal": wait.name, "payload": payload, "sender": sender,
                            "message_id": message_id}
    if kept:
        data["kept"] = True  # it came before the step waited
    c.emit("signal", step=waiting.step, **data)
    c.unsettled = True  # rules/steps.py: advance moves the step on


def _operation_signal(c: Change, waiting: WaitSnapshot) -> Signal:
    operation = c.definition.find_operation(waiting.operation or "")
    signal = operation.signal(waiting.name or "") if operation is not None else None
    if signal is None:
        raise Refused("not_waiting", f'{c.name} no longer declares the signal "{waiting.name}"')
    return signal


def signal_timeout_due(c: Change, token: str) -> None:
    waiting = c.snap.waiting
    if (waiting is None or waiting.token != token or waiting.arrived is not None
            or c.snap.status not in MOVING):
        raise Refused("stale_deadline", "The signal is no longer awaited")
    if waiting.operation is not None:  # the code goes on, told that it timed out
        c.emit("signal-timeout", step=waiting.step, signal=waiting.name,
               operation=waiting.operation)
        durable.wake(c, waiting, None, timed_out=True)
        return
    wait = c.definition.step(waiting.step).wait
    assert isinstance(wait, Signal)
    c.emit("signal-timeout", step=waiting.step, signal=wait.name,
           on_timeout=wait.on_timeout)
    if wait.on_timeout == "continue":
        c.set(state={**c.snap.state, wait.key: None},
              waiting=replace(waiting, arrived=c.env.now))
        c.unsettled = True
        return
    c.set(waiting=replace(waiting, arrived=c.env.now))  # its deadline fired: nothing to clear
    end_wait(c)
    c.fail(signal_timed_out(waiting.step, wait.name, in_seconds(wait.timeout)), waiting.step)


def timer_due(c: Change, token: str) -> None:
    waiting = c.snap.waiting
    if (waiting is None or waiting.token != token or waiting.arrived is not None
            or c.snap.status not in MOVING):  # a failed one waits for retry
        raise Refused("stale_deadline", "The timer is no longer set")
    if waiting.operation is not None:  # an operation's code slept: it goes on
        c.emit("timer-fire", step=waiting.step, due=waiting.until, operation=waiting.operation)
        durable.wake(c, waiting, None)
        return
    c.set(waiting=replace(waiting, arrived=c.env.now))
    c.emit("timer-fire", step=waiting.step, due=waiting.until)
    c.unsettled = True


def refuse_next_while_waiting(c: Change) -> None:
    """``next`` may not jump a wait: only the signal or the time moves the step on."""
    waiting = c.snap.waiting
    if waiting is None or waiting.arrived is not None or waiting.operation is not None:
        return  # an operation's wait: the operation in flight refuses it
    if waiting.kind == "signal":
        raise Refused("signal_awaited", f'Workflow step "{waiting.step}" waits for the signal '
                                        f'"{waiting.name}"')
    raise Refused("timer_pending", f'Workflow step "{waiting.step}" waits for its timer')


def _epoch(value: Any, what: str) -> float:
    """What a timer's ``until`` returned, as seconds since the epoch."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError(f"{what} returned a datetime without a time zone: give it one")
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{what} must return a datetime, not {value!r}")
