"""What keeps the instances changelist fast on big tables.

No query here reads the whole table: filters offer choices from the
registry (not ``SELECT DISTINCT``), the paginator counts at most
``ADMIN_EXACT_COUNT_LIMIT`` rows and estimates beyond that on PostgreSQL, and the
date hierarchy reads only the first and last date (``MIN``/``MAX`` on an index).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Max, Min, OuterRef, Q, QuerySet, Subquery
from django.utils.functional import cached_property

from .. import registry
from ..conf import workflow_settings
from ..models import Deadline, TaskStatus, WorkflowEvent, WorkflowInstance, WorkflowTask
from .storable_lookups import StorableLookupsChangeList

# The owner filter lists users by name only when there are at most this many.
OWNER_CHOICES_LIMIT = 20


def estimated_count(queryset: QuerySet[Any]) -> int | None:
    """PostgreSQL's estimate of the rows ``queryset`` returns, or None when it has none."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    if not queryset.query.where:  # the whole table: what ANALYZE last saw
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                           [connection.ops.quote_name(queryset.model._meta.db_table)])
            row = cursor.fetchone()
        return int(row[0]) if row and row[0] >= 0 else None
    plan = json.loads(queryset.order_by().explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


if TYPE_CHECKING:  # generic in django-stubs only
    _Paginator = Paginator[Any]
else:
    _Paginator = Paginator


class EstimatedCountPaginator(_Paginator):
    """Counts exactly up to ``ADMIN_EXACT_COUNT_LIMIT`` rows; past that, PostgreSQL's estimate."""

    estimated = False

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return super().count
        limit = int(workflow_settings.ADMIN_EXACT_COUNT_LIMIT)
        bounded = queryset.order_by().values("pk")[: limit + 1].count()
        if bounded <= limit:
            return bounded
        estimate = estimated_count(queryset)
        if estimate is None:  # no statistics (or not PostgreSQL): count it all
            return queryset.count()
        self.estimated = True
        return max(estimate, bounded)


class InstanceChangeList(StorableLookupsChangeList):
    """Rows without their state and snapshot: a page of big states would be megabytes.

    Each row knows whether its last event ended a rollback (one probe of the events'
    unique index per row of the page), so a rolled-back instance says so.
    """

    def get_queryset(self, request: Any, exclude_parameters: Any = None
                     ) -> QuerySet[WorkflowInstance]:
        last = WorkflowEvent.objects.filter(instance=OuterRef("pk"), type="rollback",
                                            sequence=OuterRef("last_event"))
        rows: QuerySet[WorkflowInstance] = super().get_queryset(request, exclude_parameters)
        return rows.defer("state", "snapshot").annotate(
            last_phase=Subquery(last.values("data__phase")[:1]))

    def get_filters(self, request: Any) -> Any:
        try:
            return super().get_filters(request)
        except (OverflowError, ValueError) as error:  # a date hierarchy link past year 9999
            raise IncorrectLookupParameters(error) from None


class WorkflowFilter(admin.SimpleListFilter):
    title = "workflow"
    parameter_name = "workflow"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        definitions = sorted(registry.all_definitions(), key=lambda d: (d.title or d.id).lower())
        return [(d.id, d.title if d.title == d.id else f"{d.title} ({d.id})")
                for d in definitions]

    def queryset(self, request: Any, queryset: QuerySet[WorkflowInstance]
                 ) -> QuerySet[WorkflowInstance]:
        return queryset.filter(workflow=self.value()) if self.value() else queryset


class CurrentStepFilter(admin.SimpleListFilter):
    """The steps of the chosen workflow (choose a workflow first when there are several)."""

    title = "current step"
    parameter_name = "current_step"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        definitions = list(registry.all_definitions())
        chosen = request.GET.get(WorkflowFilter.parameter_name)
        if chosen:
            definitions = [d for d in definitions if d.id == chosen]
        elif len(definitions) != 1:
            selected = self.value()
            return [(selected, selected)] if selected else []
        return [(step.id, step.title or step.id) for d in definitions for step in d.steps]

    def queryset(self, request: Any, queryset: QuerySet[WorkflowInstance]
                 ) -> QuerySet[WorkflowInstance]:
        return queryset.filter(current_step=self.value()) if self.value() else queryset


class WaitingFilter(admin.SimpleListFilter):
    """What an instance waits for from outside, each read by an index: a signal (the
    ``awaiting`` column), a timer (its deadline row), a person (an open task's row)."""

    title = "waiting for"
    parameter_name = "waiting"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("signal", "a signal"), ("timer", "a timer"), ("task", "a task")]

    def queryset(self, request: Any, queryset: QuerySet[WorkflowInstance]
                 ) -> QuerySet[WorkflowInstance]:
        value = self.value()
        if not value:
            return queryset
        if value == "signal":
            return queryset.filter(awaiting__isnull=False)
        if value == "timer":
            return queryset.filter(pk__in=Deadline.objects.filter(kind="timer")
                                   .values("instance_id"))
        if value == "task":
            return queryset.filter(pk__in=WorkflowTask.objects.filter(status=TaskStatus.OPEN)
                                   .values("instance_id"))
        return queryset.none()  # a value that names nothing lists nothing, as Django's own


class OwnerFilter(admin.SimpleListFilter):
    title = "owner"
    parameter_name = "owner"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        choices = [("me", "Me"), ("none", "Nobody")]
        user_model = get_user_model()
        name = user_model.USERNAME_FIELD
        users = list(user_model._default_manager.order_by(name)[: OWNER_CHOICES_LIMIT + 1])
        value = self.value()
        if len(users) <= OWNER_CHOICES_LIMIT:
            choices += [(str(user.pk), str(getattr(user, name))) for user in users]
        elif value and value not in ("me", "none"):
            chosen = user_model._default_manager.filter(pk=value).first()
            if chosen is not None:
                choices.append((str(chosen.pk), str(getattr(chosen, name))))
        return choices

    def queryset(self, request: Any, queryset: QuerySet[WorkflowInstance]
                 ) -> QuerySet[WorkflowInstance]:
        value = self.value()
        if not value:
            return queryset
        if value == "me":
            return queryset.filter(owner=request.user.pk)
        if value == "none":
            return queryset.filter(owner__isnull=True)
        try:  # clean(): a number too big for the column is refused too
            owner = get_user_model()._meta.pk.clean(value, None)
        except ValidationError as error:  # the changelist says so (?e=1), not a 500
            raise IncorrectLookupParameters(error) from None
        return queryset.filter(owner=owner)


HEX_PREFIX = re.compile(r"[0-9a-f]{4,32}")


def id_range(term: str, using: str) -> Q | None:
    """The ids that start with ``term`` (``5023163b``, as the list shows them), as a range of
    the primary key: an index scan, where ``LIKE`` on the id would read the whole table."""
    digits = term.lower().replace("-", "")
    if not HEX_PREFIX.fullmatch(digits):
        return None
    lowest = uuid.UUID(digits.ljust(32, "0"))
    connection = connections[using]
    if connection.vendor == "mysql" and connection.features.has_native_uuid_field:
        # MariaDB's uuid type does not sort as its digits read, so no range of it is a
        # prefix: compare the text, hyphens where the id has them.
        hyphens = sum(len(digits) > after for after in (8, 12, 16, 20))
        return Q(pk__startswith=str(lowest)[:len(digits) + hyphens])
    return Q(pk__gte=lowest, pk__lte=uuid.UUID(digits.ljust(32, "f")))


# How the list ends a short id (``cdd56d7d…``), and how people type that.
ELLIPSES = ("…", "...")


def as_typed(term: str) -> str:
    """A search term without the spaces around it, nor the ellipsis of a short id pasted
    from the list (``cdd56d7d…`` or ``cdd56d7d...``)."""
    term = term.strip()
    for ellipsis in ELLIPSES:
        term = term.removesuffix(ellipsis)
    return term.strip()


def workflows_titled(term: str) -> list[str]:
    """The ids of the registered definitions whose title (as the list shows it) or id has
    ``term`` in it, in any case: from the registry, so the search reads the workflow
    column's index, never the whole table."""
    wanted = term.casefold()
    return [definition.id for definition in registry.all_definitions()
            if wanted in (definition.title or "").casefold() or wanted in definition.id.casefold()]


def search_instances(queryset: QuerySet[WorkflowInstance], term: str
                     ) -> QuerySet[WorkflowInstance]:
    """An instance id, or its start as the list shows it (``cdd56d7d…``), finds that
    instance; a reference, or its start, finds its instances; a workflow's title or id, or
    part of it, the instances of that workflow; any other term, the instances of the owners
    it names."""
    term = as_typed(term)
    if not term:
        return queryset
    try:
        return queryset.filter(pk=uuid.UUID(term))
    except ValueError:
        pass
    found = Q(reference__startswith=term)
    prefix = id_range(term, queryset.db)
    if prefix is not None:
        found |= prefix
    workflows = workflows_titled(term)
    if workflows:
        found |= Q(workflow__in=workflows)
    user_model = get_user_model()
    who = Q(**{f"{user_model.USERNAME_FIELD}__icontains": term})
    email = user_model.get_email_field_name()
    if email in {f.name for f in user_model._meta.get_fields()}:
        who |= Q(**{f"{email}__icontains": term})
    return queryset.filter(found | Q(owner__in=user_model._default_manager.filter(who)
                                     .values("pk")))


def date_range(queryset: QuerySet[Any], field: str) -> tuple[Any, Any]:
    """The first and last value of ``field``: two index probes, not a scan."""
    found = queryset.order_by().aggregate(first=Min(field), last=Max(field))
    return found["first"], found["last"]
