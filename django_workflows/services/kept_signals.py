"""Signals kept for a step that did not wait yet, found when it starts waiting.

A signal that arrives before its step waits is a row (``WorkflowSignal``, status
``kept``), addressed to an instance, a reference or a correlation. A unit of work
gives the engine a way to find the oldest one for a step that starts waiting
(``Env.kept_signal``); the row is locked, so two instances never take one signal, and
the engine's ``TakeSignal`` effect marks it taken (``persistence.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.contrib.auth import get_user_model
from django.db.models import Q

from .. import engine
from ..models import SignalStatus, WorkflowInstance, WorkflowSignal

KeptSignalFinder = Callable[[str, str, str | None], engine.KeptSignal | None]


def kept_signal_finder(rows: Sequence[WorkflowInstance]) -> KeptSignalFinder:
    """The finder for a unit of work on ``rows`` (a locked chain): it knows their
    workflows and references."""
    by_id = {str(row.pk): row for row in rows}

    def find(instance_id: str, name: str, correlation: str | None) -> engine.KeptSignal | None:
        row = by_id.get(instance_id)
        if row is None:
            return None
        addressed = Q(instance_id=row.pk)
        if row.reference:
            addressed |= Q(reference=row.reference)
        if correlation is not None:
            addressed |= Q(correlation=correlation)
        kept = (WorkflowSignal.objects.filter(addressed, workflow=row.workflow, name=name,
                                              status=SignalStatus.KEPT)
                .order_by("received_at", "pk").select_for_update(skip_locked=True)
                .values_list("pk", "payload", "message_id", "sender_id").first())
        if kept is None:
            return None
        pk, payload, message_id, sender = kept
        return engine.KeptSignal(pk, payload, message_id,
                                 None if sender is None else str(sender))

    return find


def sender_of(actor: str | None) -> object:
    """The user an engine actor names (its primary key), for a signal row's ``sender``."""
    return None if actor is None else get_user_model()._meta.pk.to_python(actor)
