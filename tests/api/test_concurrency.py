"""Racing requests over real HTTP: a live server, one thread per caller.

Each test runs on SQLite (one write lock, ``BEGIN IMMEDIATE``) and on
PostgreSQL (row locks), in their own runs of the suite. Callers wait at a
barrier so that they really start together; a join timeout turns a deadlock
into a failure instead of a hang.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from django.db import connection, transaction

from django_workflows.models import WorkflowInstance
from tests.api.conftest import url
from tests.factories import UserFactory, WorkflowInstanceFactory

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db(transaction=True),
              pytest.mark.slow]

TIMEOUT = 60.0  # seconds for one race, all callers together


def race(count: int, call: Any) -> list[requests.Response]:
    """``call()`` on ``count`` threads released together; their responses."""
    barrier = threading.Barrier(count)

    def run() -> requests.Response:
        barrier.wait(timeout=TIMEOUT)
        return call()

    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(run) for _ in range(count)]
        return [future.result(timeout=TIMEOUT) for future in futures]


@pytest.fixture
def racer(db: None) -> Any:
    return UserFactory(username="racer")  # password "password"


def test_16_concurrent_next_with_one_if_match_move_the_instance_once(live_server, racer):
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True, owner=racer)
    address = live_server.url + url(instance, "next")

    responses = race(16, lambda: requests.post(
        address, headers={"If-Match": f'"{instance.revision}"'}, auth=("racer", "password"),
        timeout=TIMEOUT))

    assert Counter(r.status_code for r in responses) == {200: 1, 412: 15}
    assert {r.json()["code"] for r in responses if r.status_code == 412} == {"stale_revision"}
    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.current_step, row.revision) == ("s1", instance.revision + 1)
    assert row.history == ["s0", "s1"]


def test_10_concurrent_creates_with_one_idempotency_key_create_one_instance(live_server,
                                                                             racer):
    address = live_server.url + "/api/instances/"

    responses = race(10, lambda: requests.post(
        address, json={"workflow": "wizard", "start": True},
        headers={"Idempotency-Key": "signup-42"}, auth=("racer", "password"),
        timeout=TIMEOUT))

    assert [r.status_code for r in responses] == [201] * 10
    assert len({r.json()["id"] for r in responses}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in responses) == 9
    assert WorkflowInstance.objects.count() == 1


@pytest.mark.real_locks  # SQLite waits for its one write lock as long as its timeout says
def test_a_command_that_waits_too_long_for_the_row_lock_answers_409_busy(client_as, settings):
    user = UserFactory()
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True, owner=user)
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.2}
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk=instance.pk)
                locked.set()
                release.wait(TIMEOUT)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock, daemon=True)
    holder.start()
    try:
        assert locked.wait(TIMEOUT)
        response = client_as(user).post(url(instance, "next"))
    finally:
        release.set()
        holder.join(TIMEOUT)

    assert response.status_code == 409
    assert response.json()["code"] == "busy"
    assert WorkflowInstance.objects.get(pk=instance.pk).revision == instance.revision
