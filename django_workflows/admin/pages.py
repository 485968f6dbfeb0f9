"""What the instance and definitions pages show, read from rows and definitions."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from .. import clock, engine, registry
from ..engine import Workflow
from ..graph import to_svg
from ..models import ACTIVE_STATUSES, Status, WorkflowInstance
from ..reading.queries import LiveOperation, live_operations, marks_of
from .events import told
from .journals import journals_of
from .operations import error_now, progress_words, status_words, unit_of
from .timeline import timeline_context

EVENTS_PER_PAGE = 25
LOG_LINES = 10
TASKS_SHOWN = 10  # the newest of an instance's tasks, on its page


def change_url(instance_id: Any) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[instance_id])


def workflow_url(workflow_id: str) -> str:
    """The workflow's page (admin/workflow_page.py)."""
    return reverse("admin:django_workflows_workflowinstance_workflow", args=[workflow_id])


def diagram(definition: Workflow | None, instance: WorkflowInstance | None = None) -> str:
    """The definition as inline SVG, with the instance's steps marked."""
    if definition is None:
        return ""
    marks = marks_of(instance) if instance is not None else None
    return mark_safe(to_svg(definition, marks))  # to_svg escapes every text it draws


# How a rollback's record of an operation's undo reads, beside the operation.
UNDONE: dict[str, str | None] = {"done": "rolled back", "running": "rolling back",
                                 "failed": "rollback failed", "pending": None}


def _undone(instance: WorkflowInstance) -> dict[tuple[str, ...], str]:
    """The operations a rollback undid or is undoing, by their path of ids."""
    plan = instance.snap.rollback
    return {(*item.path, item.target): undone for item in (plan.items if plan else ())
            if item.kind == "operation" and (undone := UNDONE[item.status])}


def _outcome(op: engine.OperationSnapshot, undone: str | None) -> str | None:
    """What became of an operation that is no longer in flight; None while it is."""
    if undone:
        return undone
    if op.in_flight:
        return None
    return "not started" if op.status == "idle" else op.status


def _operation_rows(definition: Workflow | None, operations: list[LiveOperation],
                    undone: dict[tuple[str, ...], str] | None = None) -> list[dict[str, Any]]:
    rows = []
    undone = undone or {}
    now = clock.now()
    pending: list[tuple[engine.OperationSnapshot, int, tuple[str, ...], str]] = [
        (live.operation, 0, (), live.waiting_for) for live in reversed(operations)]
    while pending:  # depth first, each operation's children after it
        op, depth, parents, waiting_for = pending.pop()
        outcome = _outcome(op, undone.get((*parents, op.id)))
        found = definition.find_operation(op.id) if definition else None
        progress = op.progress
        percent = None
        if progress is not None and progress.total:
            percent = max(0.0, min(100.0, 100.0 * progress.current / progress.total))
        label, badge = status_words(op, waiting_for)  # admin/operations.py: its words
        rows.append({
            "id": op.id, "title": op.title or op.id, "depth": depth, "indent": depth * 1.5,
            "step": op.step, "status": op.status, "attempt": op.attempt,
            "status_label": label, "status_class": badge,
            "max_attempts": found.max_attempts if found else None,
            "progress": progress, "percent": percent, "logs": list(op.logs[-LOG_LINES:]),
            "progress_text": progress_words(op, unit_of(op.metadata) or unit_of(
                found.metadata if found else None)),
            "error": error_now(op),
            "in_flight": op.in_flight, "feedback": asdict(engine.feedback(op, now)),
            "outcome": outcome, "outcome_class": (outcome or "").replace(" ", "-"),
        })
        pending += [(child, depth + 1, (*parents, op.id), "")
                    for child in reversed(op.children)]
    return rows


def operations_of(instance: WorkflowInstance) -> list[dict[str, Any]]:
    """The operations (children indented after their parent), running ones live."""
    return _operation_rows(registry.find(instance.workflow), live_operations(instance),
                           _undone(instance))


def _branches(instance: WorkflowInstance) -> list[dict[str, Any]]:
    return [{"step": b.step, "id": b.id, "status": b.status, "error": b.error}
            for b in instance.snap.parallel]


def live_payload(instance: WorkflowInstance) -> dict[str, Any]:
    """What the instance page polls while work runs."""
    operations = operations_of(instance)
    return {
        "id": str(instance.pk), "status": instance.status,
        "status_label": instance.get_status_display(), "revision": instance.revision,
        "current_step": instance.current_step, "errors": list(instance.snap.errors),
        "finished": instance.is_finished,
        "operations": [{key: row[key] for key in ("id", "status", "status_label",
                                                   "status_class", "attempt", "max_attempts",
                                                   "percent", "logs", "error", "in_flight",
                                                   "feedback", "outcome", "progress_text")}
                       | {"progress": asdict(row["progress"]) if row["progress"] else None}
                       for row in operations],
        "parallel": _branches(instance),
    }


# The parts of the instance page that follow the instance (includes/<part>.html), in order.
LIVE_PARTS = ("commands", "summary", "diagram", "timeline", "tasks", "work", "state", "events")
PARTS_TEMPLATE = "admin/django_workflows/workflowinstance/includes/{}.html"


def live_parts(request: HttpRequest, context: dict[str, Any]) -> dict[str, str]:
    """The page's live parts drawn anew, as HTML, from one reading of the instance."""
    return {part: render_to_string(PARTS_TEMPLATE.format(part), context, request)
            for part in LIVE_PARTS}


def live_timeline(request: HttpRequest, instance: WorkflowInstance) -> str | None:
    """The timeline drawn up to now while work runs (its bars grow between revisions);
    None when nothing runs, as nothing then moves but with a new revision."""
    if not any(op.in_flight for op in instance.snap.operations) and \
            not any(b.status == "running" for b in instance.snap.parallel):
        return None
    return render_to_string(PARTS_TEMPLATE.format("timeline"), timeline_context(instance),
                            request)


def events_page(request: HttpRequest, instance: WorkflowInstance) -> Any:
    """The event timeline, newest first, one page of it, as of the instance row read.

    Only the events up to the row's ``last_event`` (they are written with it, in one
    transaction): an event committed after the row was read is neither counted nor
    listed, so the count and the rows always agree with each other and with the rest
    of the page.
    """
    events = (instance.events.filter(sequence__lte=instance.last_event)
              .select_related("actor").order_by("-sequence"))
    paginator = Paginator(events, EVENTS_PER_PAGE)
    page = paginator.get_page(request.GET.get("events_page"))
    # Each given its sentence and its raw JSON (events.told: one query for attempt times).
    page.object_list = told(list(page.object_list), instance.workflow, instance.pk)
    return page


def instance_context(request: HttpRequest, instance: WorkflowInstance) -> dict[str, Any]:
    definition = registry.find(instance.workflow)
    children = list(instance.children.order_by("created_at")
                    .values("id", "workflow", "status", "parent_step", "current_step"))
    child: Any  # given url and status_label, for the template
    for child in children:
        child["url"] = change_url(child["id"])
        child["status_label"] = Status(child["status"]).label
    operations = operations_of(instance)
    journals = journals_of(instance)  # durable code's, under their operations' rows
    for row in operations:
        row["journal"] = journals.get(row["id"]) if row["depth"] == 0 else None
    tasks = list(instance.tasks.select_related("claimed_by", "completed_by")
                 .order_by("-created_at")[:TASKS_SHOWN])
    task: Any  # given url, for the template
    for task in tasks:
        task.url = reverse("admin:django_workflows_workflowtask_change", args=[task.pk])
    step = definition.steps_by_id.get(instance.current_step) if definition else None
    return {
        "instance": instance, "definition": definition, "tasks": tasks,
        "current_step_title": step.title if step is not None else "",
        "diagram": diagram(definition, instance),
        "operations": operations, "journals": journals,
        "has_live_work": any(row["in_flight"] for row in operations)
        or any(b.status == "running" for b in instance.snap.parallel),
        "branches": _branches(instance),
        "rollback_items": instance.snap.rollback.items if instance.snap.rollback else (),
        "children": children,
        "nested_url": change_url(instance.nested_id) if instance.nested_id else None,
        "parent_url": change_url(instance.parent_id) if instance.parent_id else None,
        "events": events_page(request, instance),
        **timeline_context(instance),
        "state_json": json.dumps(instance.state, indent=2, ensure_ascii=False),
        "live_url": reverse("admin:django_workflows_workflowinstance_live", args=[instance.pk]),
        "definitions_url": reverse("admin:django_workflows_workflowinstance_definitions"),
        "workflow_page_url": workflow_url(instance.workflow) if definition else None,
    }


def definitions_context() -> dict[str, Any]:
    """Every registered definition, with how many of its instances are active, by status."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    rows = (WorkflowInstance.objects.filter(status__in=ACTIVE_STATUSES).order_by()
            .values("workflow", "status").annotate(n=Count("pk")))
    for row in rows:
        counts[row["workflow"]][row["status"]] = row["n"]
    nested_in: dict[str, list[str]] = defaultdict(list)
    definitions = sorted(registry.all_definitions(), key=lambda d: (d.title or d.id).lower())
    for definition in definitions:
        for step in definition.steps:
            if step.nested is not None:
                child = step.nested.id if isinstance(step.nested, Workflow) else step.nested
                nested_in[child].append(f"{definition.id}.{step.id}")
    changelist = reverse("admin:django_workflows_workflowinstance_changelist")
    return {"definitions": [{
        "id": d.id, "version": d.version, "title": d.title, "step_count": len(d.steps),
        "transition_count": len(d.transitions),
        "active": [{"status": status, "label": Status(status).label,
                    "count": counts[d.id].get(status, 0),
                    "url": f"{changelist}?{urlencode({'workflow': d.id, 'status__exact': status})}"}
                   for status in ACTIVE_STATUSES],
        "active_total": sum(counts[d.id].values()),
        "instances_url": f"{changelist}?{urlencode({'workflow': d.id})}",
        "page_url": workflow_url(d.id),
        "nested_in": nested_in.get(d.id, []),
        "diagram": diagram(d),
    } for d in definitions]}
