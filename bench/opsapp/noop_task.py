"""A Django Task that does nothing: the Tasks runner's baseline (bench/tasks_runner.py)."""

from __future__ import annotations

from django_workflows.conf import workflow_settings
from django_workflows.runners.tasks.compat import task


@task(backend=workflow_settings.TASKS_BACKEND, queue_name=workflow_settings.TASKS_QUEUE)
def noop() -> None:
    return None
