"""A plain Task of the site's own, beside the workflows' (the tasks extra): it notes where it
ran (tests/background/test_tasks_runner.py)."""

from __future__ import annotations

from django.conf import settings

from django_workflows.runners.tasks.compat import task

from .background import note, process_and_session


@task(backend="rq", queue_name=settings.TASKS["rq"]["QUEUES"][0])
def note_where() -> None:
    note(f"task {process_and_session()}")
