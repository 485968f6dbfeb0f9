"""The example's pages and the API, for the browser test (``pytest.mark.urls``)."""

from __future__ import annotations

import importlib.util

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
]
if importlib.util.find_spec("rest_framework") is not None:  # the [api] extra
    urlpatterns.append(path("api/", include("django_workflows.api.urls")))
urlpatterns.append(path("", include("example_project.shop.urls")))
