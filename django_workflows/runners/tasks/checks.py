"""What the Tasks runner needs of Django's ``TASKS`` setting, checked at start-up
(``django_workflows/checks.py`` asks when ``RUNNER`` names this runner)."""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning

from ...conf import SETTING_NAME, workflow_settings
from .compat import InvalidTaskBackend, task_backends


def check_tasks_settings() -> list[CheckMessage]:
    alias = workflow_settings.TASKS_BACKEND
    try:
        backend = task_backends[alias]
    except InvalidTaskBackend as error:
        return [Error(f"{SETTING_NAME}['TASKS_BACKEND'] is {alias!r}, which is not a backend "
                      f"of the TASKS setting: {error}",
                      hint="Name an alias of TASKS (\"default\" unless you set another).",
                      id="django_workflows.E010")]
    problems: list[CheckMessage] = []
    for name in ("TASKS_QUEUE", "TASKS_SWEEP_QUEUE"):
        queue = getattr(workflow_settings, name)
        if queue is not None and backend.queues and queue not in backend.queues:
            problems.append(Error(
                f"{SETTING_NAME}[{name!r}] is {queue!r}, which is not a queue of Tasks backend "
                f"{alias!r} ({', '.join(sorted(backend.queues))})",
                hint=f'Add it to TASKS["{alias}"]["QUEUES"] (and to RQ_QUEUES for RQ).',
                id="django_workflows.E010"))
    if not backend.supports_defer:
        problems.append(Warning(
            f"Tasks backend {alias!r} ({type(backend).__name__}) cannot defer Tasks, so the "
            "sweep cannot run as a Task: nothing times out, no retry delay ends and no lost "
            "work is recovered",
            hint="Use a backend whose worker runs elsewhere and can defer (the database "
                 "backend, RQ), or run `manage.py workflows_sweep --loop` beside it.",
            id="django_workflows.W031"))
    default = settings.DATABASES.get("default", {})
    if (not apps.is_installed("django_q") and not default.get("CONN_MAX_AGE")
            and not default.get("OPTIONS", {}).get("pool")):
        problems.append(Warning(
            "Tasks workers open a new database connection for every Task (CONN_MAX_AGE is 0 "
            "and no connection pool is configured)",
            hint="Set CONN_MAX_AGE (for example 600) or PostgreSQL's connection pool.",
            id="django_workflows.W002"))
    return problems
