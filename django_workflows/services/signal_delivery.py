"""Signals: what the world outside tells a workflow that waits (``Step(wait=Signal(...))``).

One entry point delivers, :func:`signal`. In order:

1. the signal must be one a step of the workflow waits for, and the sender one who may
   send it to the workflow (before anything else: a stranger learns nothing);
2. a ``message_id`` seen before is a repeat: acknowledged, and nothing changes. Only a
   repeat of the same message (its sender, its payload) may hand a kept one over;
3. the payload must meet the signal's schema;
4. it is handed to each instance it is addressed to, each in its own unit of work under
   that instance's row lock (``hand_over.py``): the sender is judged against that
   instance, the payload against its state's schema, and only then is the signal
   recorded, taken (or held by a paused instance). A signal refused everywhere is not
   recorded at all;
5. none waited for it: it is kept (a row, status ``kept``), with its sender, for the
   step that will wait for it, which judges its sender again before it takes it
   (``kept_signals.py``); it expires after ``SIGNAL_RETENTION``.

By correlation, the instances waiting for it are read under a lock of the address
(:func:`signal_key`) that a step starting to wait with that correlation takes too: so
either the signal sees the instance waiting, or the instance sees the signal kept, and
the answer to the sender is true. ``Signal(fan_out=)`` says whether every instance
waiting then takes it or only the first, the oldest; the same for a kept one. An
instance whose row stayed locked is handed it by the sweep (``hand_over.hand_kept``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from .. import clock, engine
from ..engine import FieldError
from ..exceptions import (
    Busy,
    InstanceNotFound,
    InvalidPayload,
    NotAllowed,
    WorkflowError,
)
from ..inputs.storable import json_problems, problem_lines
from ..models import SignalStatus, WorkflowInstance, WorkflowSignal
from . import access
from .commands import id_of
from .kept_signals import name_of, signal_key
from .persistence import check_state_size
from .signal_hand_over import awaited, awaiting, hand_kept, hand_over, record, seen_before
from .slots import lock_keys
from .unit import actor

ROUNDS = 3  # looks for the waiting instances of a correlation, when they stop waiting


@dataclass(frozen=True)
class SignalSent:
    """What became of a signal: its row, the instances that took it, and whether it was
    kept for a step that will wait for it, or was a repeat of a message seen before."""

    signal: WorkflowSignal
    taken_by: list[WorkflowInstance]
    kept: bool
    repeated: bool = False


def signal(workflow: str, name: str, payload: Any = None, *,
           instance: WorkflowInstance | str | None = None, reference: str | None = None,
           correlation: str | None = None, message_id: str | None = None,
           user: Any = None) -> SignalSent:
    """Send the signal ``name`` to the instances of ``workflow`` it is addressed to: one
    ``instance`` (or its id), the one with ``reference``, or those that wait for it
    with ``correlation`` (every one, or the first: the signal's ``fan_out``).

    Raises :class:`UnknownSignal` when no step of the workflow waits for ``name``,
    :class:`NotAllowed` when ``user`` may not send it (to the workflow, or to every
    instance it reaches), :class:`InvalidPayload` when the payload breaks the signal's
    schema or the state's, :class:`InstanceNotFound` for an unknown instance or
    reference, ``WorkflowNotMoved("not_waiting")`` when that instance is finished, and
    :class:`Busy` when its row stayed locked (the signal is kept: the sweep hands it
    over); nothing is recorded then, but for that last one. ``user=None``: trusted code.
    """
    addresses = [value for value in (instance, reference, correlation) if value is not None]
    if len(addresses) != 1:
        raise ValueError("Address a signal with exactly one of instance, reference and "
                         "correlation")
    declared = awaited(workflow, name)
    if user is not None and not access.may_send(user, workflow, name):
        raise NotAllowed(f'You may not send the signal "{name}" to workflow "{workflow}".')
    message = WorkflowSignal(workflow=workflow, name=name, message_id=message_id or None,
                             reference=reference, correlation=correlation,
                             payload=plain(payload), sender=actor(user),
                             sender_name=name_of(user),
                             received_at=clock.now_datetime())  # the clock that expires it
    if message.message_id is not None:
        seen = seen_before(message)
        if seen is not None:
            return _repeated(seen, message)
    check_state_size(payload)
    check_storable(payload)
    check_payload(declared, payload)
    if correlation is not None:
        return _by_correlation(message, declared[0].fan_out, user)
    target = _addressed(workflow, instance, reference)
    message.instance_id = target.pk if instance is not None else None
    return _to_one(message, target, user)


def _to_one(message: WorkflowSignal, target: WorkflowInstance, user: Any) -> SignalSent:
    """The signal to one instance: taken, held, kept for its step, or refused."""
    try:
        handed = hand_over(message, str(target.pk), user, keep=True)
    except Busy:
        sent = _keep(message)  # judged again by the instance when it takes it
        if sent is not None:
            return sent  # a delivery of the same message was recorded meanwhile
        raise
    if handed.repeat is not None:
        return _repeated(handed.repeat, message)
    if handed.instance is None:
        raise InstanceNotFound(f"No workflow instance {target.pk}")
    if handed.refusal is not None:
        raise handed.refusal
    if handed.taken:
        return SignalSent(message, [handed.instance], kept=False)
    return SignalSent(message, [], kept=True)


def _by_correlation(message: WorkflowSignal, fan_out: str, user: Any) -> SignalSent:
    """The signal to the instances waiting for it with its correlation (all or the first),
    or kept when none does."""
    taken: list[WorkflowInstance] = []
    refusals: list[WorkflowError] = []
    busy = False
    for _ in range(ROUNDS):
        waiting = _waiting_or_kept(message)
        if isinstance(waiting, SignalSent):
            return waiting
        for instance_id in waiting:
            try:
                handed = hand_over(message, instance_id, user)
            except Busy:
                busy = True  # kept for it below: the sweep hands it over
                continue
            if handed.repeat is not None:
                return _repeated(handed.repeat, message)
            if handed.taken and handed.instance is not None:
                taken.append(handed.instance)
                if fan_out == "first":
                    break
            elif isinstance(handed.refusal, NotAllowed | InvalidPayload):
                refusals.append(handed.refusal)  # not "not_waiting": it stopped waiting
        if taken or busy or refusals:
            break
        # Every one stopped waiting before it was handed the signal: look again.
    if busy:
        sent = _keep(message)
        if sent is not None:
            return sent
    if taken:
        return SignalSent(message, taken, kept=busy)
    if refusals and not busy:
        raise refusals[0]
    if message.pk is None:  # none waits any longer
        sent = _keep(message)
        if sent is not None:
            return sent
    return SignalSent(message, [], kept=True)


def _waiting_or_kept(message: WorkflowSignal) -> list[str] | SignalSent:
    """The ids of the instances waiting for ``message`` by its correlation, oldest first;
    when there are none, the message kept (or the repeat found meanwhile), in the same
    transaction, under the lock of its address: a step that starts waiting with it
    takes that lock too, so one of the two sees the other."""
    with transaction.atomic():
        lock_keys([signal_key(message.workflow, message.name, message.correlation)])
        waiting = [str(pk) for pk in awaiting(message).values_list("pk", flat=True)]
        if waiting or message.pk is not None:
            return waiting
        sent = _keep(message)
        return sent if sent is not None else SignalSent(message, [], kept=True)


def _keep(message: WorkflowSignal) -> SignalSent | None:
    """Keep the message for a step that will wait for it (if not recorded yet), or mark it
    kept again (an instance it was for was busy); None, or the repeat found instead."""
    if message.pk is not None:
        if message.status != SignalStatus.KEPT:
            WorkflowSignal.objects.filter(pk=message.pk).update(status=SignalStatus.KEPT)
            message.status = SignalStatus.KEPT
        return None
    message.status = SignalStatus.KEPT
    seen = record(message)
    return None if seen is None else _repeated(seen, message)


# -- repeats ----------------------------------------------------------------------------


def _repeated(seen: WorkflowSignal, message: WorkflowSignal) -> SignalSent:
    """A message id seen before: what became of the first. The same message again (its
    sender, its payload) hands a kept one over, as the sweep would; another takes
    nothing over."""
    if seen.status == SignalStatus.KEPT and _same(seen, message):
        hand_kept(seen)
        seen.refresh_from_db()
    return SignalSent(seen, _instances(seen.taken_by), kept=seen.status == SignalStatus.KEPT,
                      repeated=True)


def _same(seen: WorkflowSignal, message: WorkflowSignal) -> bool:
    return (seen.sender_id, seen.sender_name) == (message.sender_id, message.sender_name) \
        and plain(seen.payload) == plain(message.payload)


def plain(payload: Any) -> Any:
    """The payload as JSON gives it back (a tuple as a list): how repeats are compared."""
    try:
        return json.loads(json.dumps(payload))
    except (TypeError, ValueError):
        return payload  # not JSON: the checks that follow say so


# -- checks -----------------------------------------------------------------------------


def check_storable(payload: Any) -> None:
    """A payload a database can store (no NUL, no lone surrogate, not nested too deep)."""
    problems = json_problems(payload)
    if problems:
        raise InvalidPayload("; ".join(problem_lines(problems)), [
            FieldError(line.partition(": ")[0] if ": " in line else "", line.partition(": ")[2]
                       or line) for line in problem_lines(problems)])


def check_payload(declared: Iterable[engine.Signal], payload: Any) -> None:
    """The payload meets the schema of a step that waits for the signal (of one of them,
    where several do), or :class:`InvalidPayload` names what is wrong."""
    problems: list[Any] = []
    for wait in declared:
        found = wait.payload_problems(payload)
        if not found:
            return
        problems = problems or found
    if problems:
        raise InvalidPayload("; ".join(map(str, problems)), problems)


def _addressed(workflow: str, instance: WorkflowInstance | str | None,
               reference: str | None) -> WorkflowInstance:
    rows = WorkflowInstance.objects.filter(workflow=workflow)
    found = rows.filter(pk=id_of(instance)).first() if instance is not None \
        else rows.filter(reference=reference).first()
    if found is None:
        what = f"instance {instance}" if instance is not None else f'reference "{reference}"'
        raise InstanceNotFound(f'Workflow "{workflow}" has no {what}')
    return found


def _instances(ids: Iterable[str]) -> list[WorkflowInstance]:
    listed = list(ids)
    found = {str(row.pk): row for row in WorkflowInstance.objects.filter(pk__in=listed)}
    return [found[pk] for pk in listed if pk in found]
