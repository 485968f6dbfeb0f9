"""Template tags of the tasks: the inbox's link and count on the admin's index page."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from ..services.access import acting_on_tasks

register = template.Library()

COUNT_UP_TO = 99  # past it the link says "99+": counting a huge inbox is not worth a page view


@register.inclusion_tag("admin/django_workflows/inbox_link.html", takes_context=True)
def workflows_inbox(context: Any) -> dict[str, Any]:
    """How many tasks wait for the signed-in user, and how many of them are overdue."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_active or not user.is_staff:
        return {"show": False}
    tasks = acting_on_tasks(user).order_by()
    count = tasks.values("pk")[:COUNT_UP_TO + 1].count()
    overdue = tasks.filter(overdue=True).values("pk")[:COUNT_UP_TO + 1].count()
    return {"show": True, "url": reverse("admin:django_workflows_workflowtask_changelist"),
            "count": f"{COUNT_UP_TO}+" if count > COUNT_UP_TO else str(count),
            "overdue": f"{COUNT_UP_TO}+" if overdue > COUNT_UP_TO else overdue}
