"""The example's pages and the API, for the browser test (``pytest.mark.urls``)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("django_workflows.api.urls")),
    path("", include("example_project.shop.urls")),
]
