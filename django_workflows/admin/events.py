"""The event log in the admin: read-only, newest first, fast on a big table."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from ..engine import EVENT_TYPES
from ..models import WorkflowEvent
from .changelist import EstimatedCountPaginator, StorableLookupsChangeList
from .pages import change_url


class EventTypeFilter(admin.SimpleListFilter):
    title = "type"
    parameter_name = "type"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(name, name) for name in EVENT_TYPES]

    def queryset(self, request: Any, queryset: Any) -> Any:
        return queryset.filter(type=self.value()) if self.value() else queryset


@admin.register(WorkflowEvent)
class WorkflowEventAdmin(admin.ModelAdmin):
    list_display = ("sequence", "type", "instance_link", "step", "actor", "revision",
                    "created_at")
    list_filter = (EventTypeFilter,)
    search_fields = ("instance__id",)  # shown as the search box; see get_search_results
    search_help_text = "An instance id: its events."
    list_select_related = ("instance", "actor")
    ordering = ("-id",)
    sortable_by = ()
    list_per_page = 100
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = EstimatedCountPaginator
    actions = None

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type:
        return StorableLookupsChangeList

    def get_queryset(self, request: HttpRequest) -> Any:
        # The instance link needs the workflow's id, not a copy of the state on every row.
        return super().get_queryset(request).defer("instance__state", "instance__snapshot")

    @admin.display(description="instance")
    def instance_link(self, event: WorkflowEvent) -> str:
        return format_html('<a href="{}">{} {}…</a>', change_url(event.instance_id),
                           event.instance.workflow, str(event.instance_id)[:8])

    def get_search_results(self, request: HttpRequest, queryset: Any,
                           search_term: str) -> tuple[Any, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            return queryset.filter(instance_id=uuid.UUID(term)), False
        except ValueError:
            return queryset.none(), False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
