"""Template tags of the workflows admin."""

from __future__ import annotations

import datetime
from typing import Any

from django import template
from django.contrib.admin.views.main import ChangeList
from django.db.models import Model
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.text import capfirst
from django.utils.translation import gettext as _

from ..admin.changelist import date_range

register = template.Library()


def _local(value: Any) -> Any:
    return timezone.localtime(value) if timezone.is_aware(value) else value


def _months(first: datetime.datetime, last: datetime.datetime) -> list[datetime.date]:
    found, year, month = [], first.year, first.month
    while (year, month) <= (last.year, last.month):
        found.append(datetime.date(year, month, 1))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return found


def _verbose_name(model: type[Model], path: str) -> str:
    """The verbose name of the field at the end of ``path`` ("owner__date_joined")."""
    field: Any = None
    for name in path.split("__"):
        field = model._meta.get_field(name)
        model = field.related_model or model
    return str(field.verbose_name)


@register.filter
def seconds(value: Any) -> str:
    """A time to the second, in the current time zone, as a ``<time>`` element."""
    if not isinstance(value, datetime.datetime):
        return "—" if value in (None, "") else str(value)
    shown = _local(value)
    return format_html('<time datetime="{}">{}</time>', shown.isoformat(),
                       shown.strftime("%Y-%m-%d %H:%M:%S"))


# A plain inclusion tag with a template of our own: Django's date_hierarchy tag is built on
# an undocumented node class, and what its template needs changes between releases.
@register.inclusion_tag("admin/django_workflows/workflowinstance/date_hierarchy.html")
def fast_date_hierarchy(cl: ChangeList) -> dict[str, Any]:
    """Django's date hierarchy, drawn from the first and last date only.

    Django's own tag lists the years, months or days that have rows with a
    ``SELECT DISTINCT`` over the whole selection, which reads every row of a
    big table. This one reads the first and last date (an index probe each)
    and offers every year, month or day between them.
    """
    if not cl.date_hierarchy:
        return {"show": False}
    field = cl.date_hierarchy
    return {"field_name": _verbose_name(cl.model, field), **_choices(cl, field)}


def _choices(cl: ChangeList, field: str) -> dict[str, Any]:
    year_field, month_field, day_field = f"{field}__year", f"{field}__month", f"{field}__day"
    year, month, day = (cl.params.get(year_field), cl.params.get(month_field),
                        cl.params.get(day_field))

    def link(filters: dict[str, Any]) -> str:
        return cl.get_query_string(filters, [f"{field}__"])

    first, last = date_range(cl.queryset, field)
    if first is None or last is None:
        return {"show": False}
    first, last = _local(first), _local(last)
    if not (year or month or day) and first.year == last.year:
        year = first.year
        if first.month == last.month:
            month = first.month
    if year and month and day:
        date = datetime.date(int(year), int(month), int(day))
        return {"show": True,
                "back": {"link": link({year_field: year, month_field: month}),
                         "title": capfirst(formats.date_format(date, "YEAR_MONTH_FORMAT"))},
                "choices": [{"title": capfirst(formats.date_format(date, "MONTH_DAY_FORMAT"))}]}
    if year and month:
        days = [first.date() + datetime.timedelta(days=n)
                for n in range((last.date() - first.date()).days + 1)]
        return {"show": True, "back": {"link": link({year_field: year}), "title": str(year)},
                "choices": [{"link": link({year_field: year, month_field: month,
                                           day_field: d.day}),
                             "title": capfirst(formats.date_format(d, "MONTH_DAY_FORMAT"))}
                            for d in days]}
    if year:
        return {"show": True, "back": {"link": link({}), "title": _("All dates")},
                "choices": [{"link": link({year_field: year, month_field: m.month}),
                             "title": capfirst(formats.date_format(m, "YEAR_MONTH_FORMAT"))}
                            for m in _months(first, last)]}
    return {"show": True, "back": None,
            "choices": [{"link": link({year_field: str(y)}), "title": str(y)}
                        for y in range(first.year, last.year + 1)]}
