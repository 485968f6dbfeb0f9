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
        from .services import reports

        reports.configure()  # OBSERVERS, METRICS, TRACING: their extras imported only when on
        if apps.is_installed("django_q"):
            from django_q.signals import post_spawn

            from .runners.django_q import start_sweeper

            post_spawn.connect(start_sweeper, dispatch_uid="django_workflows.sweeper")
        self._connect_tasks_runner()

    def _connect_tasks_runner(self) -> None:
        """The Tasks runner, when it is the one: imported now, before a worker forks (it
        starts no sweeper thread in a process forked for one Task); ``migrate`` and requests
        start its sweep if it is not running (``runners/tasks/sweep_chain.py``)."""
        from django.core.signals import request_started
        from django.db.models.signals import post_migrate

        from .conf import TASKS_RUNNER, runner_is

        if not runner_is(TASKS_RUNNER):
            return
        # tasks: made now, so that a worker that forks a process per Task (RQ) does not
        # import them, and what they import, in every one.
        from .runners.tasks import keep_sweeping_now, tasks  # noqa: F401

        post_migrate.connect(keep_sweeping_now, sender=self,
                             dispatch_uid="django_workflows.tasks_sweep")
        request_started.connect(keep_sweeping_now, dispatch_uid="django_workflows.tasks_sweep")
