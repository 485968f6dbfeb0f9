"""What the instance page and the changelist say of a pause and of a rollback.

A paused instance says since when, by whom and why, and what came back meanwhile
(held for resume). A rolled-back instance is idle with its initial state, as the
rule says, but it is not an instance that never ran: its status reads "Rolled back"
(the changelist's badge and the page by the same test, :func:`status_badge`), and
the page keeps the rollback's record: where the instance stood, each compensation
with what it returned, the state before, when and by whom (``snapshot.rolled_back``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.utils.html import format_html

from .. import engine
from ..models import WorkflowEvent, WorkflowInstance

NOT_READ = object()


def last_rollback_phase(instance: WorkflowInstance) -> str | None:
    """The phase of the instance's last event if that is a ``rollback`` (the changelist
    annotates each row with it as ``last_phase``; one probe of the events' index here)."""
    found: Any = getattr(instance, "last_phase", NOT_READ)
    if found is not NOT_READ:
        return str(found) if found is not None else None
    return WorkflowEvent.objects.filter(
        instance=instance, sequence=instance.last_event, type="rollback").values_list(
        "data__phase", flat=True).first()


def is_rolled_back(instance: WorkflowInstance) -> bool:
    """Idle because a rollback finished (its last event says so), not idle as created."""
    return instance.status == "idle" and last_rollback_phase(instance) == "finished"


def status_shown(instance: WorkflowInstance) -> tuple[str, str]:
    """The status as the changelist and the page show it, (its badge's class, its label):
    "Rolled back" for an instance a rollback made idle again."""
    if is_rolled_back(instance):
        return "rolled-back", "Rolled back"
    return instance.status, str(instance.get_status_display())


def status_badge(instance: WorkflowInstance) -> str:
    return format_html('<span class="dwf-badge dwf-status-{}">{}</span>',
                       *status_shown(instance))


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)


def _users(*ids: str | None) -> dict[str, str]:
    """Users named by the ids the engine records (``by``), as their usernames."""
    wanted = {value for value in ids if value}
    if not wanted:
        return {}
    model = get_user_model()
    try:
        rows = model._default_manager.filter(pk__in=wanted)
    except (TypeError, ValueError):
        return {}
    return {str(user.pk): user.get_username() for user in rows}


def _by(names: dict[str, str], actor: str | None) -> str:
    if actor is None:
        return "code (no user)"
    return names.get(actor, f"user {actor} (deleted)")


def recovery_context(instance: WorkflowInstance) -> dict[str, Any]:
    """The pause and the last rollback, as the summary shows them."""
    snap = instance.snap
    paused, record = snap.paused, snap.rolled_back
    names = _users(paused.by if paused else None, record.by if record else None)
    status_class, status_label = status_shown(instance)
    context: dict[str, Any] = {"status_class": status_class, "status_label": status_label,
                               "paused": None, "rolled_back": None}
    if paused is not None:
        context["paused"] = {
            "since": _when(paused.at), "by": _by(names, paused.by), "reason": paused.reason,
            "resumes_to": paused.status, "held": [
                {"command": held.command, "at": _when(held.at), "what": _held_words(held)}
                for held in paused.held]}
    if record is not None:
        before = record.before
        context["rolled_back"] = {
            "shown_as_status": is_rolled_back(instance),
            "started_at": _when(record.started_at), "finished_at": _when(record.finished_at),
            "by": _by(names, record.by), "before": before,
            "before_started_at": _when(before.started_at) if before else None,
            "before_completed_at": _when(before.completed_at) if before else None,
            "state_json": json.dumps(dict(before.state), indent=2, ensure_ascii=False)
            if before else "",
            "items": [_item(item) for item in record.items]}
    return context


def _item(item: engine.RollbackItem) -> dict[str, Any]:
    what = {"operation": "the rollback of operation", "branch": "the compensation of branch",
            "nested": "the rollback of the nested instance",
            "step": "the compensate hook of step"}[item.kind]
    return {"label": item.label, "what": what, "target": "/".join((*item.path, item.target)),
            "step": item.step, "status": item.status, "error": item.error,
            "finished_at": _when(item.finished_at),
            "result": None if item.result is None
            else json.dumps(item.result, ensure_ascii=False)}


def _held_words(held: engine.HeldInput) -> str:
    values = held.values
    if held.command == "attempt_finished":
        outcome = values.get("outcome") or {}
        return "a worker's result (succeeded)" if outcome.get("ok") \
            else "a worker's result (failed)"
    if held.command == "attempt_interrupted":
        return "a worker that stopped answering"
    if held.command == "deadline_due":
        return f"a deadline: {values.get('kind')}"
    if held.command == "signal":
        return f"the signal {values.get('signal')}"
    return held.command
