"""Shaping lists: filters (django-filter), ordering, and pages.

A query parameter sent empty (``?status=&page=``) counts as not sent, as
django-filter and HTML forms have it; ``status`` must name a status.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django_filters.fields import IsoDateTimeField, IsoDateTimeRangeField, RangeField
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from ..models import Status, WorkflowInstance


class UTCDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, given to the database in UTC.

    Any offset is accepted (PostgreSQL refuses those beyond about 16 hours), and
    a time that does not exist in UTC (0001-01-01T00:00+05:00) answers 400.
    """

    def to_python(self, value: Any) -> datetime | None:
        result = super().to_python(value)
        if result is None:
            return None
        try:
            return result.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError("This time is out of range.", "invalid") from None


class UTCDateTimeRangeField(IsoDateTimeRangeField):
    """Two ISO 8601 times, each given to the database in UTC."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # RangeField's own, with these two fields (IsoDateTimeRangeField's makes its own).
        RangeField.__init__(self, (UTCDateTimeField(), UTCDateTimeField()), *args, **kwargs)


class TimeRangeFilter(django_filters.IsoDateTimeFromToRangeFilter):
    """``<name>_after`` / ``<name>_before`` in ISO 8601."""

    field_class = UTCDateTimeRangeField


class UserIdField(forms.Field):
    """A user id as the user model's primary key column takes it; None when empty.

    Only its form is checked, never whether such a user exists: a filter must not
    tell a missing user from one without instances.
    """

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        try:  # clean(): the column's type and range (a number too big for it is malformed)
            return get_user_model()._meta.pk.clean(value, None)
        except (DjangoValidationError, ValueError):
            raise forms.ValidationError("Enter a user id.", "invalid") from None


class UserIdFilter(django_filters.Filter):
    field_class = UserIdField


class InstanceFilter(django_filters.FilterSet):
    """``?workflow=&status=&current_step=&owner=&created_after=&updated_before=...``"""

    workflow = django_filters.CharFilter(help_text="A workflow id.")
    status = django_filters.MultipleChoiceFilter(
        choices=Status.choices, help_text="One status, or several (status=running&status=blocked).")
    current_step = django_filters.CharFilter(help_text="A step id.")
    reference = django_filters.CharFilter(help_text="Your reference for it (exact).")
    owner = UserIdFilter(help_text="The owner's user id (no such user: no instances).")
    created = TimeRangeFilter(
        field_name="created_at", help_text="created_after / created_before (ISO 8601).")
    updated = TimeRangeFilter(
        field_name="updated_at", help_text="updated_after / updated_before (ISO 8601).")

    class Meta:
        model = WorkflowInstance
        fields = ["workflow", "status", "current_step", "reference", "owner", "created",
                  "updated"]


class StableOrdering(OrderingFilter):
    """``?ordering=-updated_at,workflow``; ties broken by id so pages never repeat a row.

    An unknown field answers 400 rather than being ignored.
    """

    def remove_invalid_fields(self, queryset: QuerySet[Any], fields: Iterable[str], view: Any,
                              request: Request) -> list[str]:
        asked = list(fields)
        valid = super().remove_invalid_fields(queryset, asked, view, request)
        if len(valid) != len(asked):
            raise ValidationError({self.ordering_param: [
                f"Order by {', '.join(self._names(view))}, each with an optional '-'."]})
        return valid

    def get_ordering(self, request: Request, queryset: QuerySet[Any], view: Any) -> list[str]:
        ordering = list(super().get_ordering(request, queryset, view) or [])
        if not {"id", "-id", "pk", "-pk"} & set(ordering):
            ordering.append("id")
        return ordering

    @staticmethod
    def _names(view: Any) -> list[str]:
        return list(view.ordering_fields)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        names = "|".join(self._names(view))
        return [{
            "name": self.ordering_param, "required": False, "in": "query",
            "allowEmptyValue": True,
            "description": f"Sort by these fields (comma-separated, '-' for descending): "
                           f"{', '.join(self._names(view))}. Default: -created_at.",
            "schema": {"type": "string", "pattern": f"^-?({names})(,-?({names}))*$"},
        }]


class Pages(PageNumberPagination):
    """``?page=2&page_size=50``: ``{"count", "next", "previous", "results"}``.

    A ``page_size`` that is not a whole number of at least 1 answers 400; a
    larger one than ``max_page_size`` is cut to it.
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if not raw:  # absent or empty
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if size < 1:
            raise ValidationError({self.page_size_query_param: [
                "A whole number of at least 1 is required."]})
        return min(size, self.max_page_size)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            parameter["allowEmptyValue"] = True
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] += f" At most {self.max_page_size}."
        return parameters



class InstanceFilterBackend(DjangoFilterBackend):
    """django-filter's backend (the instances' and the tasks' lists); its schema says that an
    empty value counts as none."""


class EmptyMeansAbsent(DjangoFilterExtension):
    """The OpenAPI parameters of :class:`InstanceFilterBackend`, with ``allowEmptyValue``."""

    target_class = "django_workflows.api.filters.InstanceFilterBackend"
    priority = 1

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any,
                                        **kwargs: Any) -> list[dict[str, Any]]:
        # The base named (untyped_calls_exclude in pyproject.toml covers it; not super()).
        parameters: list[dict[str, Any]] = DjangoFilterExtension.get_schema_operation_parameters(
            self, auto_schema, *args, **kwargs)
        for parameter in parameters:
            if parameter["schema"].get("type") != "array":  # status= must name a status
                parameter["allowEmptyValue"] = True
        return parameters
