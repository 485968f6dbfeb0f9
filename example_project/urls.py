from __future__ import annotations

import importlib.util

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path


def api_urls() -> list[URLPattern | URLResolver]:
    """The REST API at /api/ and Swagger UI at /api/docs/ (when the [api] extra is there)."""
    if importlib.util.find_spec("rest_framework") is None:
        return []
    from django_workflows.api.schema_views import swagger_ui_view

    return [
        # Before the include: every other URL under /api/ answers the API's JSON 404.
        # Like the schema it reads, for signed-in users (PUBLIC_SCHEMA): others sign in first.
        path("api/docs/", swagger_ui_view(url_name="workflows-api:schema"), name="api-docs"),
        path("api/", include("django_workflows.api.urls")),
    ]


def metrics_urls() -> list[URLPattern | URLResolver]:
    """Prometheus's /metrics (when the [metrics] extra is there)."""
    if importlib.util.find_spec("prometheus_client") is None:
        return []
    from django_workflows.observability.views import metrics_view

    return [path("metrics", metrics_view, name="metrics")]


urlpatterns = [
    path("admin/", admin.site.urls),
    *api_urls(),
    *metrics_urls(),
    path("", include("example_project.shop.urls")),  # /, /wizard/, /accounts/login/, ...
]
