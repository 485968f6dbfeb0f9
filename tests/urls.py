from __future__ import annotations

import importlib.util

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
]

if importlib.util.find_spec("rest_framework") is not None:  # the [api] extra
    urlpatterns.append(path("api/", include("django_workflows.api.urls")))
