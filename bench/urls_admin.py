"""URLs for ``bench/admin_changelist.py``: our admin, and a plain one as the baseline.

``/plain-admin/`` lists the same table with Django's defaults (full counts,
``SELECT DISTINCT`` filter choices and date hierarchy, no ``select_related``):
what the changelist would cost without the care ``django_workflows.admin`` takes.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from django_workflows.models import WorkflowInstance

plain_site = admin.AdminSite(name="plain")


@admin.register(WorkflowInstance, site=plain_site)
class PlainInstanceAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "status", "current_step", "owner", "revision",
                    "updated_at")
    list_filter = ("workflow", "status", "current_step", "owner")
    search_fields = ("id", "owner__username")
    date_hierarchy = "updated_at"
    ordering = ("-updated_at",)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("plain-admin/", plain_site.urls),
]
