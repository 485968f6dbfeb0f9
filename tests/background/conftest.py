"""The real clusters the background tests share (tests/qcluster.py): one per broker; and the
Tasks runner's workers (tests/tasks_workers.py), one set per backend, chosen as a broker is.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from django_workflows.conf import DJANGO_Q_RUNNER, TASKS_RUNNER
from django_workflows.models import Attempt, AttemptStatus
from tests.qcluster import Process, background, queue_name, wait_for
from tests.tasks_workers import (
    BACKENDS,
    Workers,
    clear_rq_queue,
    forget_rq_scheduler_lock,
    tasks_background,
)

BROKERS = ["orm", "redis"]
# Every runner a background test can run on: django-q2 with each broker, and the Tasks
# runner on each backend (a test module takes them by defining its own ``broker`` fixture).
needs_tasks = [pytest.mark.needs_tasks, pytest.mark.skipif(
    importlib.util.find_spec("django_tasks_db") is None, reason="needs the tasks extra")]
TASKS_RUNNERS = [pytest.param(runner, marks=needs_tasks) for runner in BACKENDS]
RUNNERS = [pytest.param(broker, marks=pytest.mark.needs_q2) for broker in BROKERS] + TASKS_RUNNERS
REDIS = {"host": "127.0.0.1", "port": 6379, "db": 5}
UNSETTLED = (AttemptStatus.QUEUED, AttemptStatus.RUNNING)


class Clusters:
    """The cluster the tests share; started again only when needed."""

    def __init__(self) -> None:
        self._stack: ExitStack | None = None
        self._key: tuple[str, tuple[tuple[str, str], ...]] | None = None
        self.current: Process | Workers | None = None

    def get(self, broker: str, **env: str) -> Process | Workers:
        key = (broker, tuple(sorted(env.items())))
        alive = self.current is not None and self.current.alive()
        if not (alive and key == self._key):
            self.start(broker, **env)
        assert self.current is not None
        return self.current

    def start(self, broker: str, **env: str) -> Process | Workers:
        self.stop()
        if broker in BACKENDS and BACKENDS[broker] == "rq":
            # A worker killed -9 (by a test of this module or an earlier one) may hold RQ's
            # scheduler lock for a minute more (its TTL), and a worker that finds it taken
            # tries again only at its maintenance, ten minutes on: no deferred Task (the
            # sweep's chain) would run. None of ours is alive now; each set of workers
            # starts as on a machine of its own.
            forget_rq_scheduler_lock()
        self._stack = ExitStack()
        start = tasks_background if broker in BACKENDS else background
        self.current = self._stack.enter_context(start(broker, **env))
        self._key = (broker, tuple(sorted(env.items())))
        return self.current

    def stop(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack, self._key, self.current = None, None, None


@pytest.fixture(scope="module", params=BROKERS)
def broker(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def clusters(django_db_setup: None) -> Iterator[Clusters]:
    holder = Clusters()
    yield holder
    holder.stop()
    if importlib.util.find_spec("django_tasks_rq") is not None:
        clear_rq_queue()


@pytest.fixture
def enqueue_to(broker: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Work this test process creates goes to the cluster, through ``broker`` (or to the Tasks
    workers, through their backend)."""
    if broker in BACKENDS:
        from django_workflows.runners.tasks import sweep_chain

        settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "RUNNER": TASKS_RUNNER,
                                     "TASKS_BACKEND": BACKENDS[broker]}
        # The tables were flushed: this process looks for the sweep's chain at once.
        monkeypatch.setattr(sweep_chain, "_next_look", 0.0)
        return broker
    from django_q.conf import Conf

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "RUNNER": DJANGO_Q_RUNNER}
    monkeypatch.setattr(Conf, "CLUSTER_NAME", queue_name())
    if broker == "redis":
        monkeypatch.setattr(Conf, "ORM", None)
        monkeypatch.setattr(Conf, "REDIS", REDIS)
    return broker


@pytest.fixture
def cluster(enqueue_to: str, clusters: Clusters, transactional_db: None
            ) -> Iterator[Process | Workers]:
    """The shared cluster of this broker; at the end, every attempt has settled."""
    yield clusters.get(enqueue_to)
    wait_for(lambda: not Attempt.objects.filter(status__in=UNSETTLED).exists(), timeout=30,
             message="every attempt to settle")


