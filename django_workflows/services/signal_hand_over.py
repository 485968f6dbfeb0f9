"""A signal handed to one instance under its row lock, and the kept signals the sweep hands
over (``signals.py`` is the entry point that routes a delivery here).

:func:`hand_over` is one unit of work: the instance's row is locked, the sender judged
against it, and only then is the signal recorded (or a kept one locked) and given to the
engine, which judges the payload against the state; a refusal records nothing. The row is
settled by the engine's ``TakeSignal`` (``persistence.py``): taken, held by a paused
instance, or kept for a step that will wait. :func:`hand_kept` gives a kept signal to the
instances that wait for it now (one whose row was busy, a hand-over not finished), as its
own sender, by its ``fan_out``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from .. import engine
from ..conf import workflow_settings
from ..exceptions import (
    Busy,
    InvalidPayload,
    NotAllowed,
    StateTooLarge,
    UnknownSignal,
    WorkflowError,
    WorkflowNotMoved,
)
from ..models import SignalStatus, SweepItem, WorkflowInstance, WorkflowSignal
from .kept_signals import refuse, sender_of, sender_refusal
from .persistence import definition_of
from .reports import Applied
from .sweep_items import without_held_back
from .unit import deliver


def awaited(workflow: str, name: str) -> list[engine.Signal]:
    """The declarations of ``name`` by the steps (and operations' durable code) of
    ``workflow`` that wait for it."""
    declared = [signal for _, signal in definition_of(workflow).signal_waits(name)]
    if not declared:
        raise UnknownSignal(f'No step of workflow "{workflow}" waits for a signal "{name}"')
    return declared


@dataclass
class Handed:
    """What one hand-over did: the instance as it left it (None: it is gone), whether it
    took the signal (or holds it, paused), its refusal, or the delivery of the same
    message recorded meanwhile (``repeat``)."""

    instance: WorkflowInstance | None = None
    taken: bool = False
    refusal: WorkflowError | None = None
    repeat: WorkflowSignal | None = None


def hand_over(signal: WorkflowSignal, instance_id: str, user: Any, *, keep: bool = False
              ) -> Handed:
    """Hand ``signal`` to one instance under its row lock, as ``user`` (its sender).

    The signal is being delivered (not saved yet, or saved by the instance before), or
    it is a kept one (``status="kept"``, by the sweep or a repeat). Under the lock: the
    sender is judged against the instance, then the signal is recorded and given to the
    engine, which judges the payload against the state; a refusal records nothing (a
    kept one is marked refused). ``keep``: a new signal the instance does not wait for
    yet is kept for it (it was addressed to it).
    """
    handed = Handed()

    def prepare(target: WorkflowInstance) -> engine.ReceiveSignal | None:
        handed.instance = target
        if signal.pk is not None and not _still_to_hand(signal, instance_id):
            return None
        refusal = sender_refusal(signal, user, target)
        if refusal is not None:
            if signal.status == SignalStatus.KEPT and signal.pk is not None:
                refuse(signal, refusal)
            handed.refusal = NotAllowed(refusal)
            return None
        if signal.pk is None:
            signal.status = SignalStatus.TAKEN  # as it will be: never seen as kept meanwhile
            handed.repeat = record(signal)  # or the same message, recorded meanwhile
            if handed.repeat is not None:
                return None
        return engine.ReceiveSignal(
            signal.name, signal.payload, correlation=signal.correlation,
            message_id=signal.message_id, signal_id=signal.pk,
            sender=None if signal.sender_id is None else str(signal.sender_id))

    def then(applied: Applied) -> None:
        handed.instance = applied.instance
        if applied.outcome.moved:
            handed.taken = True
            settled = applied.signals.get(signal.pk)  # as the unit of work left it
            if settled is not None:
                signal.status, signal.taken_by = settled.status, settled.taken_by
                signal.taken_at, signal.detail = settled.taken_at, settled.detail
            return
        refusal = applied.refusal
        assert refusal is not None
        delivering = signal.status != SignalStatus.KEPT
        if refusal.code == "invalid_payload":
            if delivering:
                signal.delete()
            else:
                refuse(signal, str(refusal))
            handed.refusal = InvalidPayload(str(refusal), refusal.field_errors)
            return
        finished = applied.instance.status in engine.FINISHED
        if delivering and keep and not finished:
            signal.status = SignalStatus.KEPT  # for the step that will wait for it
            signal.save(update_fields=["status"])
            return
        if delivering and not signal.taken_by:
            signal.delete()  # recorded for this instance only: nothing is
        handed.refusal = WorkflowNotMoved(
            f"Instance {instance_id} is {applied.instance.status}: it waits for no signal",
            "not_waiting", instance=applied.instance) if finished else refusal

    recorded = signal.pk is not None
    try:
        deliver(instance_id, prepare=prepare, then=then, user=user,
                lock_timeout=workflow_settings.LOCK_TIMEOUT)
    except BaseException:
        if not recorded:
            signal.pk = None  # its row went with the unit of work
        raise
    return handed


def _still_to_hand(signal: WorkflowSignal, instance_id: str) -> bool:
    """Lock the signal's row; False when the instance took it already, or (a kept one) it
    was taken or refused meanwhile."""
    current = WorkflowSignal.objects.select_for_update().filter(pk=signal.pk).first()
    if current is None or instance_id in current.taken_by:
        return False
    if signal.status == SignalStatus.KEPT and current.status != SignalStatus.KEPT:
        return False
    signal.status, signal.taken_by = current.status, current.taken_by
    return True


def record(signal: WorkflowSignal) -> WorkflowSignal | None:
    """Record the signal; the delivery of the same message id recorded first, if one was
    (it committed, or commits, while this one was on its way)."""
    if signal.message_id is None:
        signal.save(force_insert=True)
        return None
    try:
        with transaction.atomic():
            signal.save(force_insert=True)
    except IntegrityError:
        seen = seen_before(signal)
        if seen is None:
            raise
        signal.pk = None
        return seen
    return None


def seen_before(message: WorkflowSignal) -> WorkflowSignal | None:
    return WorkflowSignal.objects.filter(workflow=message.workflow, name=message.name,
                                         message_id=message.message_id).first()


# -- kept signals: the sweep's part -------------------------------------------------------


# A signal has one address; the instances it names, by that address: (the signal's field,
# the instance's field).
ADDRESSES = (("instance_id", "pk"), ("reference", "reference"), ("correlation", "correlation"))


def awaiting(signal: WorkflowSignal) -> Any:
    """The instances that wait for ``signal`` by its address now, oldest first."""
    signal_field, instance_field = next(
        address for address in ADDRESSES if getattr(signal, address[0]) is not None)
    return WorkflowInstance.objects.filter(
        workflow=signal.workflow, awaiting=signal.name,
        **{instance_field: getattr(signal, signal_field)}).order_by("created_at", "pk")


def first_awaiting(signal: WorkflowSignal) -> Any:
    """The id of the oldest instance that waits for ``signal`` (None: none does)."""
    return awaiting(signal).values_list("pk", flat=True).first()


def hand_kept(signal: WorkflowSignal) -> int:
    """Hand a kept signal to the instances that wait for it now (every one, or the first:
    its fan-out), as its sender; the number that took it. Once it was handed to every
    one of them (none busy), it is kept no longer."""
    sender, refusal = sender_of(signal)
    if refusal is not None:
        refuse(signal, refusal)
        return 0
    fan_out = awaited(signal.workflow, signal.name)[0].fan_out
    taken, busy = 0, False
    for instance_id in [str(pk) for pk in awaiting(signal).values_list("pk", flat=True)]:
        if instance_id in signal.taken_by:
            continue
        try:
            handed = hand_over(signal, instance_id, sender)
        except Busy:
            busy = True
            continue
        except StateTooLarge as error:  # it would never fit: not kept for another try
            refuse(signal, f"With its payload the state would be too large: {error}")
            break
        if signal.status == SignalStatus.REFUSED:
            break
        if handed.taken:
            taken += 1
            if fan_out == "first":
                break
    signal.refresh_from_db()
    if not busy and signal.status == SignalStatus.KEPT and signal.taken_by:
        WorkflowSignal.objects.filter(pk=signal.pk, status=SignalStatus.KEPT).update(
            status=SignalStatus.TAKEN)
    return taken


def kept_and_awaited(now: datetime, limit: int = 100) -> list[WorkflowSignal]:
    """The oldest kept signals that an instance waits for now (one whose row was busy, or
    a hand-over not finished), a query per kind of address; those the sweep holds back
    after a failure are left out (``sweep_items.py``). :func:`hand_kept` hands each over.

    Most kept signals came before their step, whose entry takes them: read first, however
    many, they would hide those the sweep can hand over now."""
    kept = without_held_back(WorkflowSignal.objects.filter(status=SignalStatus.KEPT),
                             SweepItem.KEPT_SIGNAL, now)
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
