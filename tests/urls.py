from __future__ import annotations

import importlib.util

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
]

if importlib.util.find_spec("rest_framework") is not None:  # the [api] extra
    from django_workflows.api.schema_views import swagger_ui_view

    urlpatterns += [
        path("api/docs/", swagger_ui_view(url_name="workflows-api:schema")),
        path("api/", include("django_workflows.api.urls")),
    ]
