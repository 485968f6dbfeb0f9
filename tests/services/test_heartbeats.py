"""A worker's heartbeats: one thread per process beats for the attempt it runs.

The attempts run in a thread of their own here, as a django-q2 worker runs them,
with ``heartbeat_thread=True``; the test watches the attempt's row from its own
connection, as the sweep and the admin do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import override_settings

from django_workflows import Operation, Step, Transition, Workflow, registry, services
from django_workflows.models import Attempt, AttemptStatus
from django_workflows.runners.worker import run_attempt
from tests.qcluster import wait_for
from tests.services.test_background import HOLDING, HoldingRunner

pytestmark = pytest.mark.django_db(transaction=True)

BEAT = 0.2  # seconds between heartbeats, and between progress writes
started, release = threading.Event(), threading.Event()


def hold(ctx) -> str:
    """Wait for ``release`` (or until told to stop), reporting progress once a beat passed
    (an operation's progress is passed on at most every ``PROGRESS_INTERVAL``)."""
    started.set()
    began = time.monotonic()
    while not release.wait(0.02):
        ctx.check_cancelled()
        if time.monotonic() - began > BEAT and ctx.last_progress is None:
            ctx.progress(1, 2, "halfway")
        assert time.monotonic() - began < 20, "the operation was never released"
    return "done"


@pytest.fixture(autouse=True)
def holding_workflow() -> Iterator[None]:
    definition = Workflow(id="held", steps=[
        Step("work", advance="auto", operations=[Operation("hold", run=hold)]),
        Step("after")], transitions=[Transition("work", "after")])
    registry.register(definition, origin=__name__)
    started.clear()
    release.clear()
    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING, "HEARTBEAT_INTERVAL": BEAT,
                                             "PROGRESS_INTERVAL": BEAT}):
        yield
    release.set()
    registry.unregister(definition.id)


def run_in_a_worker(token: str) -> threading.Thread:
    def work() -> None:
        try:
            run_attempt(token, heartbeat_thread=True)
        finally:
            connection.close()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    assert started.wait(20), "the operation did not start"
    return worker


def queued_attempt() -> tuple[object, str]:
    instance = services.create("held", start=True)
    (token,) = HoldingRunner.held
    HoldingRunner.held.clear()
    return instance, token


def test_a_long_operation_has_its_heartbeat_renewed_and_its_progress_written_while_it_runs():
    instance, token = queued_attempt()
    worker = run_in_a_worker(token)
    claimed_at = Attempt.objects.get(token=token).claimed_at

    beats = set()
    for _ in range(3):  # three heartbeats, each newer than the last
        wait_for(lambda: Attempt.objects.get(token=token).heartbeat_at not in beats | {None},
                 timeout=5, interval=0.05, message="a new heartbeat")
        beats.add(Attempt.objects.get(token=token).heartbeat_at)
    assert min(beats) >= claimed_at
    wait_for(lambda: Attempt.objects.get(token=token).progress == {
        "current": 1, "total": 2, "message": "halfway"}, timeout=5, interval=0.05,
        message="the progress")

    release.set()
    worker.join(20)
    assert not worker.is_alive()
    assert Attempt.objects.get(token=token).status == AttemptStatus.FINISHED
    row = type(instance).objects.get(pk=instance.pk)
    assert (row.status, row.current_step) == ("running", "after")


def test_a_cancel_reaches_the_running_operation_through_its_heartbeat():
    instance, token = queued_attempt()
    worker = run_in_a_worker(token)

    services.cancel(instance.pk)

    worker.join(10)  # the operation only stops when the heartbeat read its stop flag
    assert not worker.is_alive()
    attempt = Attempt.objects.get(token=token)
    assert attempt.status == AttemptStatus.DROPPED
    assert attempt.stop_reason


def test_attempts_one_after_another_are_beaten_by_one_thread_that_lets_go_of_its_connection():
    for _ in range(3):
        started.clear()
        release.clear()
        _, token = queued_attempt()
        worker = run_in_a_worker(token)
        first = Attempt.objects.get(token=token).heartbeat_at
        wait_for(lambda: Attempt.objects.get(token=token).heartbeat_at != first,  # noqa: B023
                 timeout=5, interval=0.05, message="a heartbeat")
        assert _heartbeat_sessions() in (None, 1)  # one thread beats, on one connection
        release.set()
        worker.join(20)
        assert not worker.is_alive()

    names = [thread.name for thread in threading.enumerate()]
    assert names.count("django-workflows-heartbeat") == 1
    # CONN_MAX_AGE is 0 in the tests: with no attempt left, its connection is closed (the
    # server's session ends a moment after the client closed it).
    wait_for(lambda: _heartbeat_sessions() in (None, 0), timeout=5, interval=0.05,
             message="the heartbeat's session to end")


def _heartbeat_sessions() -> int | None:
    """Sessions whose last statement was a heartbeat's: its write or its look at the stop
    flag, which follows the write (PostgreSQL keeps it in pg_stat_activity; None elsewhere).
    Both, since a heartbeat seen written may not have looked at the flag yet."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                       "current_database() AND pid <> pg_backend_pid() AND "
                       "(query LIKE %s OR query LIKE %s)",
                       ['SELECT "django_workflows_attempt"."stop_reason"%',
                        'UPDATE "django_workflows_attempt" SET "heartbeat_at"%'])
        return cursor.fetchone()[0]
