"""Signals kept for a step that did not wait yet, found when it starts waiting.

A signal that arrives before its step waits is a row (``WorkflowSignal``, status
``kept``), addressed to an instance, a reference or a correlation. A unit of work
gives the engine a way to find the oldest one for a step that starts waiting
(``Env.kept_signal``): its sender is judged again, against this instance and this step,
as a signal delivered now would be (one refused is kept no longer); the row is locked,
so two instances never take one signal, and the engine's ``TakeSignal`` effect settles
it (``persistence.py``). A step that waits with a correlation takes the lock of that
address first, as a signal by correlation does (``signals.py``): one of them sees the
other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from .. import engine, registry
from ..exceptions import StateTooLarge
from ..models import SignalStatus, WorkflowInstance, WorkflowSignal
from . import access
from .persistence import check_state_size
from .slots import lock_keys

KeptSignalFinder = Callable[[str, str, str, str | None], engine.KeptSignal | None]
LOOKED_AT = 20  # kept signals a step looks at, at most, for one its sender may send


def kept_signal_finder(rows: Sequence[WorkflowInstance]) -> KeptSignalFinder:
    """The finder for a unit of work on ``rows`` (a locked chain): it knows their
    workflows and references."""
    by_id = {str(row.pk): row for row in rows}

    def find(instance_id: str, step: str, name: str, correlation: str | None
             ) -> engine.KeptSignal | None:
        row = by_id.get(instance_id)
        if row is None:
            return None
        if correlation is not None:
            lock_keys([signal_key(row.workflow, name, correlation)])
        addressed = Q(instance_id=row.pk)
        if row.reference:
            addressed |= Q(reference=row.reference)
        if correlation is not None:
            addressed |= Q(correlation=correlation)
        kept = (WorkflowSignal.objects.filter(addressed, workflow=row.workflow, name=name,
                                              status=SignalStatus.KEPT)
                .order_by("received_at", "pk").select_for_update(skip_locked=True)
                [:LOOKED_AT])
        for signal in kept:
            if instance_id in signal.taken_by:
                continue  # it took this one before (a step waits for it again)
            sender, refusal = sender_of(signal)
            refusal = refusal or sender_refusal(signal, sender, row, step) \
                or too_large(row, step, signal.payload)
            if refusal is not None:
                refuse(signal, refusal)
                continue
            return engine.KeptSignal(signal.pk, signal.payload, signal.message_id,
                                     None if signal.sender_id is None else str(signal.sender_id))
        return None

    return find


def too_large(row: WorkflowInstance, step: str, payload: Any) -> str | None:
    """Why ``payload`` would make the state too large to store, or None: a kept signal that
    never fits must not fail every command that enters its step."""
    definition = registry.find(row.workflow)
    key = getattr(definition.step(step).wait, "key", None) if definition is not None else None
    try:
        check_state_size({**row.state, key or "": payload})
    except StateTooLarge as error:
        return f"With its payload the state would be too large: {error}"
    return None


def signal_key(workflow: str, name: str, correlation: str | None) -> str:
    """The lock of one correlation's signal (a ``LimitedKey`` row; a hash, as the three
    together may be longer than a key)."""
    text = json.dumps([workflow, name, correlation])
    return f"signal:{hashlib.sha256(text.encode()).hexdigest()}"


# -- who sent it ------------------------------------------------------------------------


def name_of(user: Any) -> str:
    """A sender's username as the signal's row records it ("" for code, which is trusted)."""
    return "" if user is None else str(user.get_username())[:150]


def sender_of(signal: WorkflowSignal) -> tuple[Any, str | None]:
    """The user who sent a kept signal (None: code, trusted), or why nobody may stand for
    them (their account was deleted)."""
    if signal.sender_id is None:
        if signal.sender_name:
            return None, f'Its sender "{signal.sender_name}" no longer exists'
        return None, None
    user = get_user_model().objects.filter(pk=signal.sender_id).first()
    if user is None or not user.is_active:
        return None, f'Its sender "{signal.sender_name}" no longer exists or is inactive'
    return user, None


def sender_refusal(signal: WorkflowSignal, user: Any, instance: WorkflowInstance,
                   step: str | None = None) -> str | None:
    """Why ``user`` (the signal's sender) may not send it to ``instance`` (waiting in
    ``step``, or the step it waits in now), judged on the row under its lock; None: they
    may. Code (``user`` None, nobody named) may always."""
    if user is None and signal.sender_name and signal.sender_id is None:
        return f'Its sender "{signal.sender_name}" no longer exists'
    if access.may_send(user, instance.workflow, signal.name, instance, step=step):
        return None
    return f'You may not send the signal "{signal.name}" to this workflow instance.'


def refuse(signal: WorkflowSignal, reason: str) -> None:
    """A kept signal the instance that would take it refuses: kept no longer."""
    signal.status, signal.detail = SignalStatus.REFUSED, reason[:2000]
    WorkflowSignal.objects.filter(pk=signal.pk).update(status=signal.status,
                                                       detail=signal.detail)
