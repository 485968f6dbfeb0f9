from __future__ import annotations

from django.apps import AppConfig, apps


class DjangoWorkflowsConfig(AppConfig):
    name = "django_workflows"
    label = "django_workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:

        from . import checks, registry  # noqa: F401 - registers the system checks

        if apps.is_installed("rest_framework"):
            from .api import checks as api_checks  # noqa: F401 - the API's check

        registry.autodiscover()
        if apps.is_installed("django_q"):
            from django_q.signals import post_spawn

            from .sweeper import start_in_worker

            post_spawn.connect(start_in_worker, dispatch_uid="django_workflows.sweeper")
