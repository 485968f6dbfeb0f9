"""Signals: what the world outside tells a workflow that waits (``Step(wait=Signal(...))``).

``signal(workflow, name, payload, instance= | reference= | correlation=,
message_id=, user=)`` records the signal (a ``WorkflowSignal`` row) and hands it
to every instance that waits for it now, each in its own unit of work under its
row lock (``unit.deliver``). An instance that does not wait yet takes it the
moment its step starts waiting (``kept_signals.py``); a signal nobody took is
kept for ``SIGNAL_RETENTION`` seconds. A ``message_id`` seen before is
acknowledged and does nothing: providers send their webhooks again.

The sweep closes the one gap left: a step that started waiting while a signal by
its correlation was being recorded is found by :func:`deliver_kept_signals`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from .. import engine
from ..conf import workflow_settings
from ..engine import FieldError
from ..exceptions import (
    Busy,
    InstanceNotFound,
    InvalidPayload,
    NotAllowed,
    UnknownSignal,
    WorkflowNotMoved,
)
from ..models import SignalStatus, WorkflowInstance, WorkflowSignal
from ..storable import json_problems, problem_lines
from . import access
from .commands import id_of
from .persistence import check_state_size, definition_of
from .unit import Applied, actor, deliver

FINISHED = ("completed", "cancelled")


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
    ``instance`` (or its id), the one with ``reference``, or every one that waits for it
    with ``correlation``.

    Raises :class:`UnknownSignal` when no step of the workflow waits for ``name``,
    :class:`InvalidPayload` when the payload breaks the signal's schema,
    :class:`NotAllowed` when ``user`` may not send it, :class:`InstanceNotFound` for an
    unknown instance or reference, and ``WorkflowNotMoved("not_waiting")`` when that
    instance is finished; nothing is recorded then. ``user=None``: trusted code.
    """
    addresses = [value for value in (instance, reference, correlation) if value is not None]
    if len(addresses) != 1:
        raise ValueError("Address a signal with exactly one of instance, reference and "
                         "correlation")
    definition = definition_of(workflow)
    declared = [step.wait for step in definition.steps
                if isinstance(step.wait, engine.Signal) and step.wait.name == name]
    if not declared:
        raise UnknownSignal(f'No step of workflow "{workflow}" waits for a signal "{name}"')
    if user is not None and not access.may_send(user, workflow, name):
        raise NotAllowed(f'You may not send the signal "{name}" to workflow "{workflow}".')
    check_state_size(payload)
    check_storable(payload)
    check_payload(declared, payload)
    target = None
    if instance is not None or reference is not None:
        target = _addressed(workflow, instance, reference)
        if target.status in FINISHED:
            raise WorkflowNotMoved(f'Instance {target.pk} is {target.status}: it waits for no '
                                   "signal", "not_waiting", instance=target)
    row = WorkflowSignal(workflow=workflow, name=name, message_id=message_id or None,
                         instance=target if instance is not None else None,
                         reference=reference, correlation=correlation,
                         payload=payload, sender=actor(user))
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        seen = WorkflowSignal.objects.filter(workflow=workflow, name=name,
                                             message_id=row.message_id).first()
        if row.message_id is None or seen is None:
            raise
        if seen.status != SignalStatus.KEPT:
            return SignalSent(seen, _instances(seen.taken_by), kept=False, repeated=True)
        row = seen  # still kept (its first delivery found the row busy): hand it over again
        return _handed(row, _waiting(row, target), user, target, repeated=True)
    return _handed(row, _waiting(row, target), user, target)


def _waiting(row: WorkflowSignal, target: WorkflowInstance | None) -> list[WorkflowInstance]:
    """The instances to hand ``row`` to: its target, or those waiting with its correlation."""
    if target is not None:
        return [target]
    return list(WorkflowInstance.objects.filter(workflow=row.workflow, awaiting=row.name,
                                                correlation=row.correlation).order_by("pk"))


def _handed(row: WorkflowSignal, waiting: list[WorkflowInstance], user: Any,
            target: WorkflowInstance | None, *, repeated: bool = False) -> SignalSent:
    """Hand ``row`` to each of ``waiting``, each under its own lock; what became of it.

    An instance whose row stayed locked does not stop the others: the signal stays kept
    for it (the sweep hands it over), and :class:`Busy` is raised once the others had it
    when the signal was addressed to that one instance.
    """
    taken, busy, marked = [], None, False
    for candidate in waiting:
        try:
            applied = _hand(row, candidate, user)
        except Busy as error:
            busy = error
            continue
        if applied is not None and applied.outcome.moved:
            taken.append(applied.instance)
            marked = marked or _marked_taken(applied, row)
        elif applied is not None and target is not None and applied.instance.status in FINISHED:
            # It finished (a cancel) while the signal was on its way: not waited for, not kept.
            WorkflowSignal.objects.filter(pk=row.pk).update(status=SignalStatus.REFUSED)
            raise WorkflowNotMoved(f"Instance {target.pk} is {applied.instance.status}: it "
                                   "waits for no signal", "not_waiting",
                                   instance=applied.instance)
    if len(taken) == 1 and marked:  # as the unit of work wrote it: no second write
        row.status, row.taken_by = SignalStatus.TAKEN, [str(taken[0].pk)]
        row.taken_at = taken[0].updated_at
    elif taken:
        WorkflowSignal.objects.filter(pk=row.pk).update(
            status=SignalStatus.TAKEN, taken_by=[*row.taken_by, *(str(i.pk) for i in taken)],
            taken_at=timezone.now())
        row.refresh_from_db()
    if busy is not None and target is not None:
        raise busy
    return SignalSent(row, taken, kept=not taken, repeated=repeated)


def _marked_taken(applied: Applied, row: WorkflowSignal) -> bool:
    """Whether the unit of work that moved the instance marked ``row``, still kept and
    taken by no one before, taken by it (persistence: TakeSignal)."""
    return row.status == SignalStatus.KEPT and not row.taken_by and any(
        isinstance(effect, engine.TakeSignal) and effect.signal_id == row.pk
        and not effect.refused for effect in applied.outcome.effects)


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


def _hand(row: WorkflowSignal, instance: WorkflowInstance, user: Any) -> Applied | None:
    """Deliver ``row`` to ``instance`` under its lock (None: the instance is gone). Refused
    (it does not wait for this one, or no longer), the signal stays kept."""
    return deliver(str(instance.pk), engine.ReceiveSignal(
        row.name, row.payload, correlation=row.correlation, message_id=row.message_id,
        sender=None if row.sender_id is None else str(row.sender_id), signal_id=row.pk),
        user=user, lock_timeout=workflow_settings.LOCK_TIMEOUT)


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
    return list(WorkflowInstance.objects.filter(pk__in=list(ids)))


# -- the sweep's part -------------------------------------------------------------------


# A signal has one address; the instances it names, by that address: (the signal's field,
# the instance's field).
ADDRESSES = (("instance_id", "pk"), ("reference", "reference"), ("correlation", "correlation"))


def deliver_kept_signals(limit: int = 100) -> int:
    """Hand kept signals to instances that wait for them now (a step that started waiting
    while its signal was being recorded, or whose row was busy); the number taken."""
    taken = 0
    for row in kept_and_awaited(limit):
        signal_field, instance_field = next(
            address for address in ADDRESSES if getattr(row, address[0]) is not None)
        waiting = WorkflowInstance.objects.filter(
            workflow=row.workflow, awaiting=row.name,
            **{instance_field: getattr(row, signal_field)})
        for instance in waiting.order_by("pk")[:limit]:
            try:
                applied = _hand(row, instance, None)
            except Busy:
                continue  # its next turn looks again
            if applied is not None and applied.outcome.moved:
                taken += 1
                break  # a kept signal is taken once, as a step that starts waiting takes it
    return taken


def kept_and_awaited(limit: int) -> list[WorkflowSignal]:
    """The oldest kept signals that an instance waits for now, a query per kind of address.

    Most kept signals came before their step, whose entry takes them: read first, however
    many, they would hide those the sweep can hand over now."""
    kept = WorkflowSignal.objects.filter(status=SignalStatus.KEPT)
    waiting = WorkflowInstance.objects.filter(workflow=OuterRef("workflow"),
                                              awaiting=OuterRef("name"))
    found: list[WorkflowSignal] = []
    for signal_field, instance_field in ADDRESSES:
        found += kept.filter(**{f"{signal_field}__isnull": False}).filter(
            Exists(waiting.filter(**{instance_field: OuterRef(signal_field)})),
        ).order_by("received_at")[:limit]
    return sorted(found, key=lambda row: row.received_at)[:limit]


def expire_kept_signals(now: datetime) -> int:
    """Kept signals older than ``SIGNAL_RETENTION`` expire; the number that did."""
    before = now - timedelta(seconds=float(workflow_settings.SIGNAL_RETENTION))
    return WorkflowSignal.objects.filter(status=SignalStatus.KEPT,
                                         received_at__lt=before).update(
        status=SignalStatus.EXPIRED)

