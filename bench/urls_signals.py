"""The REST API alone, as a project mounts it (bench/signals.py)."""

from django.urls import include, path

urlpatterns = [path("api/", include("django_workflows.api.urls"))]
