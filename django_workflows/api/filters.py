"""Shaping lists: filters (django-filter), ordering, and pages."""

from __future__ import annotations

from typing import Any

import django_filters
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from rest_framework.filters import OrderingFilter
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from ..models import Status, WorkflowInstance


class InstanceFilter(django_filters.FilterSet):
    """``?workflow=&status=&current_step=&owner=&created_after=&updated_before=...``"""

    workflow = django_filters.CharFilter(help_text="A workflow id.")
    status = django_filters.MultipleChoiceFilter(
        choices=Status.choices, help_text="One status, or several (status=running&status=blocked).")
    current_step = django_filters.CharFilter(help_text="A step id.")
    owner = django_filters.ModelChoiceFilter(
        queryset=get_user_model().objects.all(), help_text="The owner's user id.")
    created = django_filters.IsoDateTimeFromToRangeFilter(
        field_name="created_at", help_text="created_after / created_before (ISO 8601).")
    updated = django_filters.IsoDateTimeFromToRangeFilter(
        field_name="updated_at", help_text="updated_after / updated_before (ISO 8601).")

    class Meta:
        model = WorkflowInstance
        fields = ["workflow", "status", "current_step", "owner", "created", "updated"]


class StableOrdering(OrderingFilter):
    """``?ordering=-updated_at``; ties broken by id so pages never repeat a row."""

    def get_ordering(self, request: Request, queryset: QuerySet[Any], view: Any) -> list[str]:
        ordering = list(super().get_ordering(request, queryset, view) or [])
        if not {"id", "-id", "pk", "-pk"} & set(ordering):
            ordering.append("id")
        return ordering


class Pages(PageNumberPagination):
    """``?page=2&page_size=50``: ``{"count", "next", "previous", "results"}``."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
