"""A paused instance: what it refuses, what it holds until it resumes, what it lets by.

Each command declares what it does while its instance is paused (``while_paused``
in ``engine/commands.py``): people's commands are ``"refused"`` (code ``paused``),
but ``pause``, ``resume`` and ``cancel``, which are ``"accepted"``; what comes back
from the world (a worker's result or its death, a deadline, a signal) is
``"held"``: checked as its own rule would check it now (a stale one is refused as
ever), then kept in the snapshot in the order it came, with a ``held`` event, and
applied by that same rule on resume (``rules/recovery.py``); a held signal that is no
longer awaited then is kept again. A worker's claim is recorded as ever. A cancel ends
the pause: what workers reported meanwhile is recorded as it ended, held signals are
kept again, and nothing follows from it.
"""

from __future__ import annotations

import contextlib
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from ..change import Change, Collected
from ..definition import in_seconds
from ..errors import HookFailed, Refused
from ..held import held_command
from ..messages import INTERRUPTED_BRANCH, INTERRUPTED_OPERATION
from ..outcome import ClearDeadline, TakeSignal
from ..snapshot import ErrorInfo, HeldInput, PauseSnapshot, plain_json
from .results import owner_of, stop_acknowledged
from .work import put_branch, put_operation

if TYPE_CHECKING:
    from ..commands import AttemptOutcome, Command

# A worker's reports on an attempt: one of them per attempt, never two.
ATTEMPT_REPORTS = frozenset({"attempt_finished", "attempt_interrupted"})


def meets(c: Change, command: Command) -> bool:
    """What a paused instance does with ``command``: True when it held it (its rule runs
    on resume); raises the ``paused`` refusal when it refuses it; False: the rule runs."""
    paused = c.snap.paused
    if paused is None or command.while_paused == "accepted":
        return False
    if command.while_paused == "refused":
        why = f" ({paused.reason})" if paused.reason else ""
        raise Refused("paused", f"{c.name} is paused{why}: resume it first")
    hold(c, command, paused)
    return True


def hold(c: Change, command: Command, paused: PauseSnapshot) -> None:
    """Keep ``command`` for resume, once its own rule found it current (not stale)."""
    token = getattr(command, "token", None)
    for held in paused.held:
        if token is not None and held.token == token and (
                held.command == command.name
                or {held.command, command.name} <= ATTEMPT_REPORTS):
            raise Refused("stale_attempt" if command.name in ATTEMPT_REPORTS
                          else "stale_deadline", f"{token} was already reported")
    # Its own rule, on the instance as it would be if it were not paused, judges it now.
    probe = Change(c.definition, c.snap.changed(status=paused.status, paused=None), c.env,
                   collected=Collected())
    with contextlib.suppress(HookFailed):  # recorded on the probe only: it runs on resume
        type(command).rule(probe, command)
    values = {f.name: plain_json(getattr(command, f.name)) for f in fields(command)}
    if values.get("signal_id") is not None:  # its row says so until it is applied
        c.effect(TakeSignal(c.snap.id, values["signal_id"], "held"))
    c.set(paused=replace(paused, held=(*paused.held, HeldInput(command.name, values,
                                                                c.env.now))))
    c.emit("held", step=c.snap.current_step, command=command.name, **_what(c, command))


def keep_signal_again(c: Change, held: HeldInput) -> None:
    """A held signal that was not applied (no longer awaited when the instance resumed, or
    the instance was cancelled) is kept again, for a step that will wait for it: nothing
    held is lost."""
    signal_id = held.values.get("signal_id") if held.command == "signal" else None
    if signal_id is not None:
        c.effect(TakeSignal(c.snap.id, signal_id, "kept"))


def _what(c: Change, command: Any) -> dict[str, Any]:
    """What the ``held`` event says of what came: the attempt's work, the deadline's kind,
    the signal's name."""
    if command.name in ATTEMPT_REPORTS:
        kind, owner = owner_of(c, command.token)
        target = getattr(owner, "target", None) or (
            f"{owner.step}:{owner.id}" if kind == "branch" else owner.id)
        outcome = getattr(command, "outcome", None)
        return {"kind": kind, "target": target,
                "ok": outcome.ok if outcome is not None else False}
    if command.name == "deadline_due":
        return {"kind": command.kind}
    if command.name == "signal":
        return {"signal": command.signal, "message_id": command.message_id}
    return {}


def end_for_cancel(c: Change) -> None:
    """A paused instance is cancelled: each attempt that reported while it was paused
    ended as it reported (an operation keeps its result, for a rollback to undo), the
    rest of what it held is dropped, and the pause ends."""
    paused = c.snap.paused
    if paused is None:
        return
    c.set(paused=None)
    for held in paused.held:
        keep_signal_again(c, held)
        if held.command not in ATTEMPT_REPORTS or held.token is None:
            continue
        try:
            kind, owner = owner_of(c, held.token)
        except Refused:
            continue
        outcome = _outcome(held)
        if kind == "stopping":
            stop_acknowledged(c, owner, outcome)
        elif kind == "operation":
            _operation_ended(c, owner, outcome)
        elif kind == "branch":
            ok = outcome is not None and outcome.ok
            error = None if ok else (outcome.error.message if outcome and outcome.error
                                     else INTERRUPTED_BRANCH)
            put_branch(c, replace(owner, status="succeeded" if ok else "failed", error=error,
                                  token=None))
            c.emit("branch-succeeded" if ok else "branch-failed", step=owner.step,
                   branch=owner.id, error=error)


def _operation_ended(c: Change, operation: Any, outcome: AttemptOutcome | None) -> None:
    definition = c.definition.find_operation(operation.id)
    if definition is not None and in_seconds(definition.timeout) and operation.token:
        c.effect(ClearDeadline(c.snap.id, operation.token))
    if outcome is not None and outcome.ok:
        put_operation(c, replace(operation, status="succeeded", result=outcome.value,
                                 error=None, token=None, completed_at=c.env.now,
                                 children=outcome.children))
        c.emit("operation-succeeded", step=operation.step, operation=operation.id,
               attempt=operation.attempt)
        return
    error = (outcome.error if outcome is not None else None) or ErrorInfo(
        "OperationInterruptedError", INTERRUPTED_OPERATION)
    put_operation(c, replace(operation, status="failed", error=error, token=None,
                             completed_at=c.env.now))
    c.emit("operation-failed", step=operation.step, operation=operation.id,
           error=error.message)


def _outcome(held: HeldInput) -> AttemptOutcome | None:
    """A held report's outcome (None: the attempt was interrupted)."""
    return getattr(held_command(held), "outcome", None)
