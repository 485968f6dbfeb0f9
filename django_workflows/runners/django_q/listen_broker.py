"""django-q2's ORM broker, woken by PostgreSQL's ``NOTIFY`` instead of its poll.

django-q2's ORM broker looks for work, and when there is none sleeps ``poll``
seconds before it looks again: a task enqueued just after a look waits that long.
This broker ``LISTEN``s on a channel of its queue while the queue is empty and
every enqueue sends a ``NOTIFY`` on it, so a waiting cluster looks again at once;
``poll`` is then only how long it waits without a notification (set it higher:
the notification does the waking). Use it in place of the ORM broker::

    Q_CLUSTER = {"orm": "default", "poll": 2, ...,
                 "broker_class": "django_workflows.runners.django_q.listen_broker.ListenORM"}

It listens through psycopg 3, Django's PostgreSQL driver of choice (with psycopg2
only, it is the ORM broker as it is). On a database other than PostgreSQL it is the
ORM broker as it is too. A notification
is sent when the enqueuing transaction commits (our runner enqueues after the
command's commit), and a lost one only costs a poll.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from typing import Any

from django.db import connections
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf, logger


class ListenORM(ORM):
    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key)
        self._listener: Any = None
        self._listener_pid = 0

    @property
    def channel(self) -> str:
        """A channel name for the queue (identifiers are at most 63 bytes)."""
        key = (self.list_key or Conf.CLUSTER_NAME or "default").encode()
        return "dwf_q_" + hashlib.sha1(key).hexdigest()[:20]

    @staticmethod
    def _on_postgresql() -> bool:
        return connections[Conf.ORM].vendor == "postgresql"

    @staticmethod
    def _can_listen() -> bool:
        return ListenORM._on_postgresql() and importlib.util.find_spec("psycopg") is not None

    def enqueue(self, task: Any) -> Any:
        pk = super().enqueue(task)
        if self._on_postgresql():
            with connections[Conf.ORM].cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, '')", [self.channel])
        return pk

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        if not self._can_listen():
            polled: list[tuple[Any, Any]] | None = super().dequeue()
            return polled
        listener = self._listening()  # before looking: a task enqueued after the look wakes it
        tasks = self._take()
        if tasks:
            return tasks
        self._wait(listener, Conf.POLL)
        return None

    def _take(self) -> list[tuple[Any, Any]]:
        """Lock the next tasks for this cluster, as the ORM broker does."""
        queue = self.get_connection()
        taken = []
        for task in queue.filter(key=self.list_key, lock__lt=timezone.now())[:Conf.BULK]:
            if queue.filter(id=task.id, lock=task.lock).update(lock=self.timeout(task)):
                taken.append((task.pk, task.payload))  # else another cluster was faster
        return taken

    def _listening(self) -> Any:
        """This process's own connection, listening on the channel (made after a fork)."""
        if self._listener is not None and self._listener_pid == os.getpid() \
                and not self._listener.closed:
            return self._listener
        import psycopg

        params = connections[Conf.ORM].get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        self._listener = psycopg.connect(**params, autocommit=True)
        self._listener_pid = os.getpid()
        self._listener.execute(f"LISTEN {connections[Conf.ORM].ops.quote_name(self.channel)}")
        return self._listener

    def _wait(self, listener: Any, seconds: float) -> None:
        """Until a notification comes (all those waiting are read) or ``seconds`` pass."""
        try:
            for _ in listener.notifies(timeout=seconds, stop_after=1):
                pass
            for _ in listener.notifies(timeout=0):  # the others sent meanwhile: one look
                pass
        except Exception:  # a broken listener: the next dequeue makes a new one
            logger.warning("The LISTEN connection broke; polling until it is made again",
                           exc_info=True)
            self._listener = None
