"""The sweeper's loop and its lease, in this process: who sweeps, when it wakes, what it says.

(The sweepers in a real qcluster's workers are tested in tests/background/test_sweeper.py.)
"""

from __future__ import annotations

import importlib
import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone

from django_workflows import Operation, Step, Workflow, registry, services
from django_workflows.models import Attempt, AttemptStatus, Deadline, SweepLease
from django_workflows.runners import sweeper_thread
from django_workflows.runners.sweeper_thread import Sweeper
from django_workflows.services.sweep import LEASE, sweep_health

pytestmark = pytest.mark.django_db(transaction=True)


class HoldingRunner:
    """Workers that never come: the step's operation stays queued."""

    def enqueue(self, tokens):
        pass


@pytest.fixture
def timed_step():
    """A step that times out after 30 s: each started instance has one deadline."""
    definition = Workflow(id="timed", steps=[
        Step("wait", timeout=30, operations=[Operation("op", run=lambda ctx: None)]),
        Step("after")])
    registry.register(definition, origin="tests.services.test_sweeper")
    with override_settings(DJANGO_WORKFLOWS={
            "RUNNER": "tests.services.test_sweeper.HoldingRunner"}):
        yield definition
    registry.unregister(definition.id)


def due_in(instance, seconds: float) -> None:
    Deadline.objects.filter(instance=instance).update(
        due_at=timezone.now() + timedelta(seconds=seconds))


def lease() -> SweepLease:
    return SweepLease.objects.get(name=LEASE)


# -- the lease -------------------------------------------------------------------------------


def test_one_sweeper_holds_the_lease_and_records_that_it_swept():
    first, second = Sweeper(holder="one"), Sweeper(holder="two")

    first.turn()
    assert second.turn() == sweeper_thread.STANDBY  # stands by
    assert (first.leading, second.leading) == (True, False)
    held = lease()
    assert held.holder == "one"
    assert timezone.now() - held.swept_at < timedelta(seconds=2)


def test_a_released_lease_is_taken_at_the_next_try():
    first, second = Sweeper(holder="one"), Sweeper(holder="two")
    first.turn()

    first.release()  # as a worker that exits cleanly does
    second.turn()
    assert second.leading and lease().holder == "two"


def test_the_lease_of_a_holder_that_died_runs_out():
    Sweeper(holder="dead").turn()
    SweepLease.objects.update(held_until=timezone.now() - timedelta(seconds=1))

    taker = Sweeper(holder="alive")
    taker.turn()
    assert taker.leading and lease().holder == "alive"


def test_a_missing_lease_row_is_made_again():
    SweepLease.objects.all().delete()  # a test database's flush

    newcomer = Sweeper(holder="new")
    newcomer.turn()
    assert newcomer.leading and lease().holder == "new"


# -- when it wakes ---------------------------------------------------------------------------


def test_the_holder_wakes_when_the_next_deadline_falls_due(timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, 0.4)  # sooner than the poll
    due = Deadline.objects.get(instance=instance).due_at

    wait = Sweeper(holder="one").turn()

    # What was left until the deadline when the turn ended, however long the turn took on
    # a busy machine: the deadline set the wait, not the poll.
    left = (due - timezone.now()).total_seconds()
    assert wait < sweeper_thread.POLL
    assert abs(wait - left) < 0.1


def test_with_nothing_due_soon_it_looks_again_within_the_poll(timed_step):
    services.create("timed", start=True)  # due in 30 s

    wait = Sweeper(holder="one").turn()
    assert 0 < wait <= sweeper_thread.POLL


def test_a_due_deadline_fires_on_the_holders_turn(timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, -0.01)

    Sweeper(holder="one").turn()
    instance.refresh_from_db()
    assert instance.status == "failed" and "timed out" in instance.errors[0]
    assert not Deadline.objects.exists()


def test_a_sweeper_standing_by_fires_nothing(timed_step):
    instance = services.create("timed", start=True)
    Sweeper(holder="one").turn()
    due_in(instance, -0.01)

    Sweeper(holder="two").turn()
    instance.refresh_from_db()
    assert instance.status == "running"


def test_a_run_fires_a_deadline_within_a_second_of_its_time(timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, 0.5)
    due_at = Deadline.objects.get().due_at
    running = Sweeper(holder="one")
    thread = threading.Thread(target=running.run, kwargs={"duration": 3})
    thread.start()
    try:
        deadline = time.monotonic() + 3
        while Deadline.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        fired_at = timezone.now()
    finally:
        running.stop()
        thread.join(5)
    assert not Deadline.objects.exists()
    assert timedelta(0) <= fired_at - due_at < timedelta(seconds=1)
    assert lease().held_until is None  # stopped: handed on


def test_the_loop_goes_on_after_the_database_failed(monkeypatch, caplog, timed_step):
    real = sweeper_thread.sweep_turn
    calls: list[int] = []

    def flaky(now, **options):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return real(now, **options)

    monkeypatch.setattr(sweeper_thread, "sweep_turn", flaky)
    monkeypatch.setattr(sweeper_thread, "STANDBY", 0.05)
    instance = services.create("timed", start=True)
    due_in(instance, -0.01)
    call_command("workflows_sweep", "--loop", "--for", "1", stdout=StringIO())

    assert "The sweep failed" in caplog.text and len(calls) > 1
    instance.refresh_from_db()
    assert instance.status == "failed"  # the next turn did it


def test_a_single_sweep_still_raises(monkeypatch):
    def broken(*args, **kwargs):
        raise OperationalError("the database is down")

    # (the module: services.sweep itself is the function of the same name)
    monkeypatch.setattr(importlib.import_module("django_workflows.services.sweep"),
                        "fire_due_deadlines", broken)
    with pytest.raises(OperationalError):
        call_command("workflows_sweep", stdout=StringIO())


# -- saying so when no sweep runs ------------------------------------------------------------


def stale() -> None:
    SweepLease.objects.update_or_create(
        name=LEASE, defaults={"swept_at": timezone.now() - timedelta(minutes=5)})


def test_a_site_whose_sweeps_run_is_healthy(timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, -60)
    Sweeper(holder="one").turn()

    assert not sweep_health().stuck


def test_no_sweep_lately_and_an_overdue_deadline_is_stuck(timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, -60)
    stale()

    health = sweep_health()
    assert health.stuck and health.overdue == 1


def test_no_sweep_lately_but_nothing_overdue_is_not_stuck(timed_step):
    services.create("timed", start=True)  # due in 30 s
    stale()

    assert not sweep_health().stuck


def test_an_attempt_no_worker_claimed_for_long_is_overdue_work():
    Attempt.objects.create(token="t", instance=services.create("wizard"), kind="operation",
                           target="x", status=AttemptStatus.QUEUED,
                           enqueued_at=timezone.now() - timedelta(minutes=2))
    SweepLease.objects.update(swept_at=None)  # never swept

    assert sweep_health().overdue == 1


def test_the_check_warns_when_work_waits_for_a_sweep(timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, -60)
    stale()

    warnings = [m for m in run_checks(databases=["default"]) if m.id == "django_workflows.W030"]
    assert len(warnings) == 1
    assert "1 deadlines or queued attempts are overdue" in warnings[0].msg
    assert "qcluster" in warnings[0].hint

    Sweeper(holder="one").turn()  # a sweep ran (and fired it)
    assert not [m for m in run_checks(databases=["default"])
                if m.id == "django_workflows.W030"]


def test_the_admin_shows_a_banner_while_work_waits_for_a_sweep(client, admin_user, timed_step):
    instance = services.create("timed", start=True)
    due_in(instance, -60)
    stale()
    client.force_login(admin_user)

    for url in ("/admin/", "/admin/django_workflows/workflowinstance/",
                "/admin/django_workflows/workflowtask/"):
        page = client.get(url).content.decode()
        assert "No sweep has run since" in page, url
        assert "manage.py qcluster" in page, url

    Sweeper(holder="one").turn()
    assert "No sweep has run" not in client.get("/admin/").content.decode()


def test_the_task_of_an_earlier_versions_schedule_sweeps_once_and_returns(timed_step):
    from django_workflows.runners.django_q.tasks import sweep_loop

    instance = services.create("timed", start=True)
    due_in(instance, -0.01)
    started = time.monotonic()
    assert sweep_loop() == "1 deadline fired, 0 attempts interrupted, 0 attempts handed out again"
    assert time.monotonic() - started < 5  # it no longer loops for a minute, holding a worker
