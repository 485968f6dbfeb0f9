"""The instance page's timeline: its rows read in at most five queries, drawn as SVG.

One query for the instance's events (at most ``MAX_EVENTS``, the newest; the timeline
says how many older ones it left out), one for its operations' attempt rows (a claim
the instance has not recorded yet is only there), one for the entries of its operations'
journals (durable code: ``MAX_JOURNAL``, the newest; only once an operation was handed
out), one for its nested children and one for their step events. Nothing is read per
event. The drawing is :mod:`django_workflows.graph.timeline_svg`'s.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from .. import clock, engine, registry
from ..engine import Workflow
from ..graph.timeline import AttemptRow, Child, Happening, JournalRow, Titles
from ..graph.timeline_events import timeline_of
from ..graph.timeline_svg import timeline_svg
from ..models import Attempt, JournalEntry, WorkflowEvent, WorkflowInstance

MAX_EVENTS = 2000  # the newest; older ones are left out, and the timeline says so
MAX_ATTEMPTS = 500
MAX_CHILDREN = 10
MAX_CHILD_EVENTS = 1000
MAX_JOURNAL = 500  # the newest entries of its operations' journals, each a mark
CHILD_EVENTS = engine.CHILD_LANE  # what a nested child's lane shows (engine/events.py)


def titles_of(definition: Workflow | None) -> Titles:
    """What the definition calls its steps, operations and tasks."""
    if definition is None:
        return Titles()
    return Titles(
        steps={step.id: step.title or step.id for step in definition.steps},
        operations={key: operation.title or key
                    for key, operation in definition.operations_by_id.items()},
        tasks={step.id: step.task.title or step.title or step.id
               for step in definition.steps if step.task is not None})


def _happenings(rows: list[dict[str, Any]], actor: str) -> list[Happening]:
    return [Happening(row["type"], row["created_at"].timestamp(), row["step"],
                      row["data"] or {}, _error_text(row["error"]), row[actor])
            for row in rows]


def _error_text(error: Any) -> str | None:
    if error is None or isinstance(error, str):
        return error
    return str(error.get("message", error)) if isinstance(error, dict) else str(error)


def _journal_rows(instance: WorkflowInstance) -> list[JournalRow]:
    """The newest entries of its operations' journals, oldest first; no query before an
    operation was handed out (its journal's key is its first attempt's token)."""
    if not any(op.journal for op in instance.snap.operations):
        return []
    rows = (JournalEntry.objects.filter(instance=instance).order_by("-finished_at")
            .values("operation", "position", "name", "kind", "finished_at", "tries")
            [:MAX_JOURNAL])
    return [JournalRow(row["operation"], row["position"], row["name"], row["kind"],
                       row["finished_at"].timestamp(), row["tries"]) for row in rows][::-1]


def timeline_context(instance: WorkflowInstance) -> dict[str, Any]:
    """The timeline of ``instance`` as of the row read (its events up to ``last_event``)."""
    actor = f"actor__{get_user_model().USERNAME_FIELD}"
    fields = ("sequence", "type", "step", "data", "error", "created_at", actor)
    rows = list(instance.events.filter(sequence__lte=instance.last_event)
                .order_by("-sequence").values(*fields)[:MAX_EVENTS])[::-1]
    omitted = rows[0]["sequence"] - 1 if rows else 0
    attempts = [AttemptRow(row["kind"], row["target"], row["number"], row["status"],
                           row["enqueued_at"].timestamp(),
                           row["claimed_at"].timestamp() if row["claimed_at"] else None,
                           row["finished_at"].timestamp() if row["finished_at"] else None,
                           row["worker"])
                for row in Attempt.objects.filter(instance=instance, kind="operation")
                .order_by("-enqueued_at").values(
                    "kind", "target", "number", "status", "enqueued_at", "claimed_at",
                    "finished_at", "worker")[:MAX_ATTEMPTS]]
    children = list(instance.children.order_by("created_at")
                    .values("id", "workflow", "status")[:MAX_CHILDREN])
    child_events: dict[Any, list[dict[str, Any]]] = {child["id"]: [] for child in children}
    if children:
        for row in (WorkflowEvent.objects.filter(instance_id__in=list(child_events),
                                                 type__in=CHILD_EVENTS)
                    .order_by("instance_id", "sequence")
                    .values("instance_id", *fields)[:MAX_CHILD_EVENTS]):
            child_events[row["instance_id"]].append(row)
    child_titles: dict[str, Titles] = {}
    nested = []
    for child in children:
        definition = registry.find(child["workflow"])
        label = f"{definition.title if definition and definition.title else child['workflow']}"\
                f" {str(child['id'])[:8]}"
        child_titles[label] = titles_of(definition)
        nested.append(Child(label, _happenings(child_events[child["id"]], actor),
                            child["status"]))
    events = _happenings(rows, actor)
    finished = None
    if instance.status not in engine.ACTIVE and events:
        finished = max(events[-1].at, instance.completed_at.timestamp()
                       if instance.completed_at else 0.0)
    timeline = timeline_of(events, now=clock.now(), titles=titles_of(
        registry.find(instance.workflow)), attempts=attempts, status=instance.status,
        finished_at=finished, children=nested, child_titles=child_titles, omitted=omitted,
        journal=_journal_rows(instance))
    drawing: SafeString | str = ""
    if events:  # timeline_svg escapes every text it draws
        drawing = mark_safe(timeline_svg(timeline, tz=timezone.get_current_timezone(),
                                         title=f"Timeline of {instance.name}"))
    return {"timeline": drawing, "timeline_omitted": omitted,
            "timeline_lanes": len(timeline.lanes)}
