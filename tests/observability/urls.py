"""The test project's URLs with the /metrics view mounted as docs/observability.md says."""

from __future__ import annotations

from django.urls import path

from django_workflows.observability.views import metrics_view
from tests.urls import urlpatterns as project_urls

urlpatterns = [*project_urls, path("metrics", metrics_view)]
