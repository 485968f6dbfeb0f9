"""The ORM broker woken by PostgreSQL's NOTIFY (django_workflows/runners/django_q/listen_broker.py).

Its poll is set to 5 s here: work that starts within a second of being
enqueued was woken by the notification, not found by the poll.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import pytest
from django.db import connection

from django_workflows import services
from django_workflows.models import Attempt, WorkflowInstance
from tests.qcluster import background, queue_name, wait_for

from .conftest import UNSETTLED

if TYPE_CHECKING:
    from django_workflows.runners.django_q.listen_broker import ListenORM

pytestmark = [pytest.mark.postgres, pytest.mark.needs_q2, pytest.mark.django_db(transaction=True)]
POLL = 5.0


@pytest.fixture
def listen_broker(settings, monkeypatch: pytest.MonkeyPatch) -> ListenORM:
    from django_q.conf import Conf

    from django_workflows.runners.django_q.listen_broker import ListenORM  # needs the [q2] extra

    monkeypatch.setattr(Conf, "POLL", POLL)
    monkeypatch.setattr(Conf, "ORM", "default")
    monkeypatch.setattr(Conf, "CLUSTER_NAME", queue_name())
    monkeypatch.setattr(Conf, "BROKER_CLASS",
                        "django_workflows.runners.django_q.listen_broker.ListenORM")
    return ListenORM(queue_name())


def test_a_waiting_dequeue_wakes_when_a_task_is_enqueued(listen_broker: ListenORM) -> None:
    woke: list[float] = []

    def wait() -> None:
        try:
            assert listen_broker.dequeue() is None  # empty: it waits for a notification
            woke.append(time.monotonic())
        finally:
            connection.close()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)  # the waiter is listening (it listens before it looks)
    sent = time.monotonic()
    listen_broker.enqueue("a task")
    waiter.join(timeout=POLL + 5)

    assert woke and woke[0] - sent < 1.0, "woken by the poll, not by the notification"
    assert [payload for _, payload in listen_broker.dequeue()] == ["a task"]
    assert listen_broker.dequeue() is None  # the notifications sent meanwhile were all read


def test_a_cluster_with_a_long_poll_starts_work_at_once(listen_broker: ListenORM,
                                                         settings) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "RUNNER": "django_workflows.runners.django_q.Runner"}
    with background("orm-listen", DWF_Q_POLL=str(POLL)):
        services.create("bg-progress", state={"steps": 1, "tick": 0}, start=True)  # warm up
        wait_for(lambda: not Attempt.objects.filter(status__in=UNSETTLED).exists(),
                 timeout=30, message="the warm-up operation")
        for _ in range(3):  # with the poll alone, each would wait 2.5 s on average
            instance = services.create("bg-progress", state={"steps": 1, "tick": 0},
                                       start=True)
            attempt = wait_for(lambda pk=instance.pk: Attempt.objects.filter(
                instance_id=pk, claimed_at__isnull=False).first(), timeout=POLL + 10,
                message="the attempt to be claimed")
            assert (attempt.claimed_at - attempt.enqueued_at).total_seconds() < 1.0
        wait_for(lambda: not Attempt.objects.filter(status__in=UNSETTLED).exists(),
                 timeout=30, message="the operations to finish")
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "done"
