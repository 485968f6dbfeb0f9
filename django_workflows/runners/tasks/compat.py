"""Django's Tasks framework: ``django.tasks`` on Django 6.0+, the ``django-tasks`` backport on
Django 5.2. The one place that knows which; the rest imports from here. (Types are read
from ``django.tasks``' stubs; the backport has the same API.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING or find_spec("django.tasks") is not None:
    from django.tasks import Task, TaskContext, task, task_backends
    from django.tasks.base import TASK_MAX_PRIORITY
    from django.tasks.exceptions import InvalidTask, InvalidTaskBackend
else:  # Django 5.2: pip install django-tasks (the tasks extra)
    from django_tasks import TaskContext, task, task_backends
    from django_tasks.base import TASK_MAX_PRIORITY, Task
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask

__all__ = ["TASK_MAX_PRIORITY", "InvalidTask", "InvalidTaskBackend", "Task", "TaskContext",
           "task", "task_backends", "task_of"]


def task_of(backend: str, queue: str, **options: Any
            ) -> Callable[[Callable[..., Any]], Task[..., Any]]:
    """``@task`` on ``backend`` and ``queue``; when those are not in ``TASKS``, on a backend
    and a queue that are, so that importing a module of Tasks never fails before the system
    checks can say what is wrong (check ``E010``). The runner enqueues each Task with the
    settings of the moment (``Task.using``)."""
    def made(function: Callable[..., Any]) -> Task[..., Any]:
        made_task: Task[..., Any]
        for alias, name in _backends_and_queues(backend, queue):
            try:
                made_task = task(backend=alias, queue_name=name, **options)(function)
                return made_task
            except (InvalidTaskBackend, InvalidTask):
                continue
        made_task = task(**options)(function)  # Django's defaults: its own error, if any
        return made_task
    return made


def _backends_and_queues(backend: str, queue: str) -> Iterator[tuple[str, str]]:
    """``(backend, queue)``, then every backend of ``TASKS`` with that queue or one of its own."""
    yield backend, queue
    for alias in getattr(settings, "TASKS", {}):
        try:
            queues = sorted(task_backends[alias].queues)
        except InvalidTaskBackend:
            continue
        for name in (queue, *queues):
            yield alias, name
