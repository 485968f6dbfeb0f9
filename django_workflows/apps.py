from __future__ import annotations

from django.apps import AppConfig


class DjangoWorkflowsConfig(AppConfig):
    name = "django_workflows"
    label = "django_workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.apps import apps

        from . import checks, registry  # noqa: F401 - registers the system checks

        if apps.is_installed("rest_framework"):
            from .api import checks as api_checks  # noqa: F401 - the API's check

        registry.autodiscover()
