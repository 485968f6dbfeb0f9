"""Ids and filter values no column can hold: a message on the admin's pages, never a 500.

PostgreSQL's text refuses NUL characters with an error when the query runs, and Django's
admin passes an id from the URL, a filter from the query string and the ids a bulk action
selected straight to the database (a UUID that is not one is refused as Django refuses it,
with an error too). Every ModelAdmin of the app takes :class:`StorableLookupsAdmin`, so
each kind of input is judged in one place:

- an object's page (change, history, delete, and the app's own pages that read the object
  with ``get_object``) treats such an id as naming nothing: Django's "doesn't exist"
  message and a redirect; and the permission to see (or delete) such objects at all is
  checked before the id is read;
- a changelist refuses such a filter as Django refuses a bad lookup (``?e=1``) and says
  which filter;
- a bulk action leaves such a selected id out, as it leaves out the id of a row since
  deleted.

Django itself drops NUL characters from the search box's term.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import FieldDoesNotExist, PermissionDenied, ValidationError
from django.db.models import AutoField, BigAutoField, IntegerField, Model, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict

from ..inputs.storable import json_problems

M = TypeVar("M", bound=Model)

if TYPE_CHECKING:  # django-stubs' ModelAdmin is generic in its model
    from django.contrib.admin import ModelAdmin as GenericModelAdmin
else:
    class GenericModelAdmin(admin.ModelAdmin, Generic[M]):
        """Django's ModelAdmin, which can be given its model's type: ``[WorkflowTask]``."""


def unstorable(text: str) -> bool:
    """Whether no text column can hold ``text`` (a NUL character, an unpaired surrogate)."""
    return bool(json_problems(text))


LARGEST_KEY = 2**63 - 1  # of a 64-bit integer: no integer column holds more


def names_no_row(model: type[Model], value: str) -> bool:
    """Whether ``value`` cannot be the primary key of any row of ``model``: not of its
    type (a UUID that is not one), an integer no column can hold (SQLite refuses it with
    an error), or text no column can hold."""
    try:
        key = model._meta.pk.to_python(value)
    except (ValidationError, ValueError, TypeError):
        return True
    if isinstance(key, int):
        return not -LARGEST_KEY - 1 <= key <= LARGEST_KEY
    return isinstance(key, str) and unstorable(key)


def too_large(model: type[Model], name: str, value: str) -> bool:
    """Whether ``value`` of the filter ``name`` is an integer that the integer column it
    filters cannot hold (SQLite refuses it with an error when the query runs)."""
    try:
        field = model._meta.get_field(name.split("__", 1)[0])
    except FieldDoesNotExist:
        return False
    target = getattr(field, "target_field", None) or field  # a key: the column it points at
    if not isinstance(target, IntegerField | AutoField | BigAutoField):
        return False
    try:
        return not -LARGEST_KEY - 1 <= int(value) <= LARGEST_KEY
    except ValueError:
        return False  # not a number: Django's own filter says so


class StorableLookupsChangeList(ChangeList):
    """A filter value no column can hold is a bad lookup (``?e=1``), as Django's own are.

    Django's filters pass any value through, so it is refused here first. A value that is
    merely unknown (``?status__exact=bogus``) lists nothing, as Django's filters do.
    """

    def get_filters(self, request: Any) -> Any:
        found = super().get_filters(request)  # Django refuses lookups it does not allow first
        for name, values in self.get_filters_params().items():
            if any(unstorable(value) for value in values):
                # Django's redirect to ?e=1 says nothing itself: the next page shows why.
                messages.error(request, f"The filter {name} cannot hold NUL characters; the "
                                        "list is shown unfiltered.", fail_silently=True)
                raise IncorrectLookupParameters(f"{name}: NUL characters are not allowed")
            if any(too_large(self.model, name, value) for value in values):
                messages.error(request, f"The filter {name} names no row: no number that "
                                        "large is stored; the list is shown unfiltered.",
                               fail_silently=True)
                raise IncorrectLookupParameters(f"{name}: no column holds that number")
        return found


class StorableLookupsAdmin(GenericModelAdmin[M]):
    """The app's ModelAdmin base: an id or a filter value no column can hold names nothing."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return StorableLookupsChangeList

    def get_object(self, request: HttpRequest, object_id: str,
                   from_field: str | None = None) -> M | None:
        if isinstance(object_id, str) and unstorable(object_id):
            return None  # Django's pages then say it does not exist
        return super().get_object(request, object_id, from_field)

    # Who may not see (or delete) any such object is refused before the id is read.
    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return super().change_view(request, object_id, form_url, extra_context)

    def history_view(self, request: HttpRequest, object_id: str,
                     extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return super().history_view(request, object_id, extra_context)

    def delete_view(self, request: HttpRequest, object_id: str,
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_delete_permission(request):
            raise PermissionDenied
        return super().delete_view(request, object_id, extra_context)

    def response_action(self, request: HttpRequest, queryset: QuerySet[M], *args: Any,
                        **kwargs: Any) -> HttpResponse | None:
        """Selected ids no row can have are left out, as ids of rows since deleted are:
        with none left, Django says that items must be selected and nothing was done."""
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        readable = [value for value in selected if not names_no_row(self.model, value)]
        if len(readable) != len(selected):
            data = request.POST.copy()
            data.setlist(helpers.ACTION_CHECKBOX_NAME, readable)
            # Immutable, as Django makes it.
            request.POST = QueryDict(data.urlencode(), encoding=data.encoding)
        return super().response_action(request, queryset, *args, **kwargs)
