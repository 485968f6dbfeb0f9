"""Schedules fired by several sweeps at once, with real threads on a database with real row
locks (PostgreSQL, MariaDB): whatever the number of sweeps, one instance per due time.

Each round starts every sweep at a barrier; every join has a timeout, so a deadlock fails
the test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections, transaction

from django_workflows import Schedule
from django_workflows.models import WorkflowSchedule
from django_workflows.services.schedules import fire_due_schedules, runs_of, sync_schedules
from tests import dbutil
from tests.testapp.schedules import registered

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]

JOIN_TIMEOUT = 30.0
SWEEPS = 4
T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)


def per_due_time(schedule: Schedule) -> Counter[str]:
    return Counter(runs_of(schedule.id).values_list("reference", flat=True))


@pytest.mark.parametrize("catch_up", ["none", "all"])
def test_sweeps_at_once_make_one_instance_per_due_time(catch_up):
    schedule = Schedule("race-every-minute", workflow="scheduled-report", every=60,
                        catch_up=catch_up)
    with registered(schedule):
        sync_schedules(T0 - timedelta(seconds=1))
        rounds = 12
        for minute in range(rounds):
            now = T0 + timedelta(minutes=minute, seconds=0.5)
            results = dbutil.at_once(*[lambda now=now: fire_due_schedules(now)] * SWEEPS)
            assert not [r for r in results if isinstance(r, Exception)], results
            assert sum(results) == 1, (minute, results)  # one of them made it

        made = per_due_time(schedule)
        assert len(made) == rounds and set(made.values()) == {1}
        assert WorkflowSchedule.objects.get(pk=schedule.id).next_due_at == \
            T0 + timedelta(minutes=rounds)


def test_sweeps_at_once_catching_up_make_each_missed_due_time_once():
    schedule = Schedule("race-catch-up", workflow="scheduled-tick", every=60, catch_up="all")
    with registered(schedule):
        sync_schedules(T0 - timedelta(seconds=1))
        now = T0 + timedelta(minutes=249, seconds=30)  # 250 due times: three batches

        while WorkflowSchedule.objects.get(pk=schedule.id).next_due_at <= now:
            results = dbutil.at_once(*[lambda: fire_due_schedules(now)] * SWEEPS)
            assert not [r for r in results if isinstance(r, Exception)], results

        made = per_due_time(schedule)
        assert len(made) == 250 and set(made.values()) == {1}


def test_a_sweep_skips_a_schedule_another_holds_instead_of_waiting_for_it():
    schedule = Schedule("race-held", workflow="scheduled-report", every=60)
    with registered(schedule):
        sync_schedules(T0 - timedelta(seconds=1))
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            try:
                with transaction.atomic():
                    WorkflowSchedule.objects.select_for_update().get(pk=schedule.id)
                    holding.set()
                    release.wait(JOIN_TIMEOUT)
            finally:
                connections.close_all()

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        assert holding.wait(JOIN_TIMEOUT)
        try:
            started = time.monotonic()
            assert fire_due_schedules(T0 + timedelta(seconds=1)) == 0
            assert time.monotonic() - started < 2
        finally:
            release.set()
            holder.join(JOIN_TIMEOUT)

        assert fire_due_schedules(T0 + timedelta(seconds=2)) == 1  # the next turn runs it
