"""A workflow's page: where its instances stand now, how long they stay in each step, and
where they fail, over a chosen period.

Every query is bounded whatever the size of the tables: a step's instances are counted by
status from one index (``dwf_instance_step_status``) up to ``EXACT_COUNT_LIMIT``, past
which PostgreSQL's estimate is shown (elsewhere, "more than"); the stays and failures are
the newest ``STAYS_READ`` and ``FAILURES_READ`` of each step in the period, read newest
first from partial indexes of the events (``dwf_event_stay_end``, ``dwf_event_failure``);
of a step id other workflows have too, among its ``SHARED_STEP_READ`` newest events.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from .. import engine, registry
from ..engine import Workflow
from ..graph import to_svg
from ..models import (
    ACTIVE_STATUSES,
    FAILURE_EVENTS,
    STAY_END_EVENTS,
    Status,
    WorkflowEvent,
    WorkflowInstance,
)
from .changelist import estimated_count

EXACT_COUNT_LIMIT = 1_000  # a count past this is PostgreSQL's estimate
STAYS_READ = 500  # the newest stays of a step in the period that its times are read from
FAILURES_READ = 1_000  # the newest failures of a step in the period
ERRORS_SHOWN = 3  # a step's most common errors
# A step id that other workflows have too: its stays and failures are looked for among the
# newest this many of its events (of any workflow), so the others' are never read to the end.
SHARED_STEP_READ = 10_000
# The events a stay in a step begins with: entered, or returned to (engine/events.py).
STAY_STARTS = engine.STAY_STARTS

PERIODS = {"24h": ("last 24 hours", timedelta(hours=24)),
           "7d": ("last 7 days", timedelta(days=7)),
           "30d": ("last 30 days", timedelta(days=30))}
DEFAULT_PERIOD = "7d"


def period_of(value: str | None) -> tuple[str, str | None]:
    """The period chosen (a key of ``PERIODS``), and what was wrong with ``value`` if it
    named none (then the default period)."""
    if not value or value in PERIODS:  # none given (or empty): the default
        return value or DEFAULT_PERIOD, None
    shown = value if len(value) <= 40 else value[:40] + "…"
    return DEFAULT_PERIOD, (f"Unknown period {shown!r}: choose one of "
                            f"{', '.join(PERIODS)}. Showing the {PERIODS[DEFAULT_PERIOD][0]}.")


@dataclass(frozen=True)
class Count:
    """How many rows, as told: exactly, estimated (``≈``) or at least (``more than``)."""

    value: int
    kind: str = "exact"  # "exact", "estimate", "more"

    def __str__(self) -> str:
        if self.kind == "estimate":
            return f"≈{self.value:,}"
        if self.kind == "more":
            return f"more than {self.value:,}"
        return f"{self.value:,}"


def bounded_count(queryset: QuerySet[Any]) -> Count:
    """The rows of ``queryset``: exactly up to ``EXACT_COUNT_LIMIT`` (an index scan of at
    most that many entries), past it PostgreSQL's estimate (one EXPLAIN). Not the estimate
    first: its statistics spread a status over every step, and lag behind the rows."""
    found = queryset.order_by().values("pk")[: EXACT_COUNT_LIMIT + 1].count()
    if found <= EXACT_COUNT_LIMIT:
        return Count(found)
    if connections[queryset.db].vendor == "postgresql":
        return Count(max(estimated_count(queryset) or 0, found), "estimate")
    return Count(EXACT_COUNT_LIMIT, "more")


def changelist_url(workflow: str, **filters: str) -> str:
    query = urlencode({"workflow": workflow, **filters})
    return f"{reverse('admin:django_workflows_workflowinstance_changelist')}?{query}"


def percentile(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile of sorted values (``share`` 0.5: the median)."""
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def duration_words(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def of_workflow(events: QuerySet[WorkflowEvent], workflow: str, shared: bool
                ) -> QuerySet[WorkflowEvent]:
    """``events`` (of one step id) of ``workflow``'s instances; a ``shared`` step id's among
    its newest ``SHARED_STEP_READ`` events only (one more probe of the same index)."""
    mine = events.filter(instance__workflow=workflow)
    if not shared:
        return mine
    oldest_read = list(events.order_by("-created_at").values_list("created_at", flat=True)
                       [SHARED_STEP_READ - 1:SHARED_STEP_READ])
    return mine.filter(created_at__gte=oldest_read[0]) if oldest_read else mine


def stays_of(workflow: str, step: str, since: datetime, *, shared: bool = False
             ) -> list[float]:
    """Seconds that the newest ``STAYS_READ`` stays in ``step`` ended in the period lasted
    (left or skipped, from when the step was entered or returned to)."""
    began = (WorkflowEvent.objects.filter(instance=OuterRef("instance"), step=step,
                                          sequence__lt=OuterRef("sequence"),
                                          type__in=STAY_STARTS)
             .order_by("-sequence").values("created_at")[:1])
    ended = WorkflowEvent.objects.filter(step=step, type__in=STAY_END_EVENTS,
                                         created_at__gte=since)
    ends = (of_workflow(ended, workflow, shared)
            # Never entered: no stay (has_key, as a NULL would exclude the others too).
            .exclude(Q(type="skip") & Q(data__has_key="unavailable"))
            .order_by("-created_at")
            .annotate(began=Subquery(began)).values_list("created_at", "began")[:STAYS_READ])
    return sorted((left - entered).total_seconds() for left, entered in ends if entered)


def failures_of(workflow: str, step: str, since: datetime, *, shared: bool = False
                ) -> tuple[int, list[tuple[str, int]]]:
    """How many failures of the newest ``FAILURES_READ`` in the period were in ``step``,
    and their most common errors with how often each (of as common ones, the newest)."""
    failed = WorkflowEvent.objects.filter(step=step, type__in=FAILURE_EVENTS,
                                          created_at__gte=since)
    errors = list(of_workflow(failed, workflow, shared).order_by("-created_at")
                  .values_list("error", flat=True)[:FAILURES_READ])
    common = Counter(str(error) if error is not None else "(no message)" for error in errors)
    return len(errors), common.most_common(ERRORS_SHOWN)


def _step_row(definition: Workflow, step_id: str, title: str, since: datetime, *,
              shared: bool) -> dict[str, Any]:
    instances = WorkflowInstance.objects.filter(workflow=definition.id, current_step=step_id)
    counts = []
    for status in ACTIVE_STATUSES:
        found = bounded_count(instances.filter(status=status))
        if found.value:
            counts.append({"status": status, "label": Status(status).label, "count": found,
                           "url": changelist_url(definition.id, current_step=step_id,
                                                 status__exact=status)})
    stays = stays_of(definition.id, step_id, since, shared=shared)
    failed, errors = failures_of(definition.id, step_id, since, shared=shared)
    return {
        "id": step_id, "title": title, "counts": counts,
        "url": changelist_url(definition.id, current_step=step_id),
        "stays": len(stays), "stays_capped": len(stays) >= STAYS_READ,
        "median": duration_words(percentile(stays, 0.5)) if stays else None,
        "p95": duration_words(percentile(stays, 0.95)) if stays else None,
        "failures": failed, "failures_capped": failed >= FAILURES_READ,
        "errors": [{"message": message, "count": n} for message, n in errors],
    }


def _diagram(definition: Workflow, steps: list[dict[str, Any]]) -> str:
    badges = {row["id"]: [(c["status"], f"{c['count']} {c['label'].lower()}",
                           f"{c['count']} {c['label'].lower()} in {row['title']}")
                          for c in row["counts"]] for row in steps}
    links = {row["id"]: row["url"] for row in steps}
    return mark_safe(to_svg(definition, badges=badges, links=links))  # to_svg escapes its text


def workflow_page_context(definition: Workflow, period: str) -> dict[str, Any]:
    """What the workflow's page shows over ``period`` (a key of ``PERIODS``)."""
    since = timezone.now() - PERIODS[period][1]  # the events' own clock
    elsewhere = {step.id for other in registry.all_definitions() if other.id != definition.id
                 for step in other.steps}
    steps = [_step_row(definition, step.id, step.title or step.id, since,
                       shared=step.id in elsewhere) for step in definition.steps]
    totals = WorkflowInstance.objects.filter(workflow=definition.id)
    counted = [(status, bounded_count(totals.filter(status=status))) for status in Status.values]
    by_status = [{"status": status, "label": Status(status).label, "count": found,
                  "url": changelist_url(definition.id, status__exact=status)}
                 for status, found in counted if found.value]
    return {
        "definition": definition, "steps": steps, "diagram": _diagram(definition, steps),
        "by_status": by_status,
        "period": period, "period_label": PERIODS[period][0],
        "periods": [{"key": key, "label": label, "chosen": key == period}
                    for key, (label, _) in PERIODS.items()],
        "stays_read": STAYS_READ, "failures_read": FAILURES_READ,
        "exact_count_limit": f"{EXACT_COUNT_LIMIT:,}",
        "shared_step_read": f"{SHARED_STEP_READ:,}",
        "any_failures": any(row["failures"] for row in steps),
        "instances_url": changelist_url(definition.id),
    }
