"""A project that already serves django-prometheus's /metrics mounts ours beside it."""

from __future__ import annotations

from django.urls import path
from django_prometheus.exports import ExportToDjangoView

from django_workflows.observability.views import metrics_view

urlpatterns = [
    path("metrics", ExportToDjangoView, name="prometheus-django-metrics"),
    path("metrics/workflows", metrics_view),
]
