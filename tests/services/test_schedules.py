"""Schedules in the service layer: rows, one instance per due time, overlap, catch_up, pause
and resume, and the sweep that fires them.

The time is given to ``fire_due_schedules(now)`` (and set on the fake clock where the
service reads it itself), so nothing here waits.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from django_workflows import Schedule, clock, registry, services
from django_workflows.engine import schedules as engine_schedules
from django_workflows.exceptions import NotAllowed
from django_workflows.models import SweepFailure, WorkflowInstance, WorkflowSchedule
from django_workflows.runners.sweeper_thread import Sweeper
from django_workflows.services import schedules as service_schedules
from django_workflows.services.schedules import (
    UnknownSchedule,
    fire_due_schedules,
    grace,
    next_schedule_due_at,
    runs_of,
    sync_schedules,
)
from django_workflows.services.sweep import next_deadline_at, sweep
from django_workflows.testing import FakeClock
from tests.factories import UserFactory
from tests.testapp.schedules import registered

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)  # a due time of every schedule below


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def row(schedule: Schedule) -> WorkflowSchedule:
    return WorkflowSchedule.objects.get(pk=schedule.id)


def references(schedule: Schedule) -> list[str]:
    return sorted(runs_of(schedule.id).values_list("reference", flat=True))


def ref(schedule: Schedule, seconds: float) -> str:
    return schedule.reference(at(seconds))


@pytest.fixture
def fake_clock():
    fake = FakeClock(T0)
    clock.use(fake.now)
    yield fake
    clock.use(None)


def every_minute(**options) -> Schedule:
    return Schedule("report-every-minute", workflow="scheduled-report", every=60, **options)


def known(schedule: Schedule, since: datetime = T0 - timedelta(seconds=1)) -> Schedule:
    """The schedule's row made at ``since``: its first due time is the next after it."""
    sync_schedules(since)
    return schedule


# -- rows --------------------------------------------------------------------------------


def test_a_registered_schedule_gets_a_row_due_at_its_next_time_and_nothing_back_filled():
    with registered(every_minute()) as (schedule,):
        made = fire_due_schedules(at(30))

        assert made == 0
        assert row(schedule).next_due_at == at(60)
        assert not row(schedule).paused and row(schedule).last_due_at is None


def test_a_schedule_whose_definition_changed_is_reckoned_again_from_where_it_stood():
    with registered(every_minute()) as (schedule,):
        known(schedule)
        assert row(schedule).next_due_at == T0
    with registered(Schedule(schedule.id, workflow="scheduled-report", every=7200)):
        sync_schedules(at(30))

        assert row(schedule).next_due_at == T0  # 10:00 is a due time of every 2 hours too
    with registered(Schedule(schedule.id, workflow="scheduled-report", every=420)):
        sync_schedules(at(30))

        # 10:00 is no multiple of 7 minutes since the epoch; 10:05 is the first after it.
        assert row(schedule).next_due_at == T0 + timedelta(minutes=5)


# -- one instance per due time ----------------------------------------------------------


def test_a_due_time_makes_one_instance_with_its_reference_started():
    with registered(every_minute()) as (schedule,):
        known(schedule)

        assert fire_due_schedules(at(0.3)) == 1

        instance = runs_of(schedule.id).get()
        assert instance.reference == "report-every-minute@2030-01-01T10:00:00+00:00"
        assert instance.workflow == "scheduled-report" and instance.status == "running"
        assert row(schedule).last_run_id == instance.pk
        assert row(schedule).last_due_at == T0 and row(schedule).next_due_at == at(60)


def test_sweeping_again_makes_no_second_instance_of_a_due_time():
    with registered(every_minute()) as (schedule,):
        known(schedule)

        fire_due_schedules(at(1))
        fire_due_schedules(at(2))
        fire_due_schedules(at(59))

        assert references(schedule) == [ref(schedule, 0)]


def test_an_instance_already_made_with_the_reference_is_taken_as_the_run():
    """A row made again from scratch (a restored database) finds the run there."""
    with registered(every_minute()) as (schedule,):
        known(schedule)
        existing = services.create("scheduled-report", reference=ref(schedule, 0))

        assert fire_due_schedules(at(1)) == 0

        assert references(schedule) == [ref(schedule, 0)]
        assert row(schedule).last_run_id == existing.pk and row(schedule).next_due_at == at(60)


def test_each_due_time_makes_its_own_instance():
    with registered(every_minute()) as (schedule,):
        known(schedule)
        for seconds in (0.5, 60.5, 120.5):
            fire_due_schedules(at(seconds))

        assert references(schedule) == [ref(schedule, 0), ref(schedule, 60), ref(schedule, 120)]


def test_start_false_leaves_the_run_idle():
    with registered(every_minute(start=False)) as (schedule,):
        known(schedule)
        fire_due_schedules(at(1))

        assert runs_of(schedule.id).get().status == "idle"


def test_the_run_gets_the_state_the_schedule_gives_for_its_due_time():
    schedule = Schedule("monthly", workflow="scheduled-report", cron="0 3 1 * *",
                        timezone="Europe/Berlin",
                        state=lambda due: {"period": f"{due:%Y-%m %H:%M}"})
    with registered(schedule):
        known(schedule, datetime(2030, 5, 20, tzinfo=UTC))

        fire_due_schedules(datetime(2030, 6, 1, 1, 0, 1, tzinfo=UTC))

        assert runs_of("monthly").get().state == {"period": "2030-06 03:00"}


def test_a_run_that_cannot_be_made_is_logged_and_the_schedule_moves_on(caplog):
    def broken(due):
        raise RuntimeError("no period")

    with registered(every_minute(state=broken)) as (schedule,):
        known(schedule)
        with caplog.at_level(logging.ERROR, logger="django_workflows"):
            assert fire_due_schedules(at(1)) == 0

        assert "could not be made" in caplog.text and "no period" in caplog.text
        assert not runs_of(schedule.id).exists()
        assert row(schedule).next_due_at == at(60)  # not tried again at every sweep


def test_a_schedule_of_a_workflow_that_is_not_registered_moves_on_too(caplog):
    with registered(Schedule("ghostly", workflow="no-such-workflow", every=60)) as (schedule,):
        known(schedule)
        with caplog.at_level(logging.ERROR, logger="django_workflows"):
            fire_due_schedules(at(1))

        assert 'No workflow "no-such-workflow"' in caplog.text
        assert row(schedule).next_due_at == at(60)


def test_a_row_of_a_schedule_no_longer_declared_is_left_as_it_is():
    with registered(every_minute()) as (schedule,):
        known(schedule)
    fire_due_schedules(at(1))

    assert row(schedule).next_due_at == T0 and not runs_of(schedule.id).exists()
    assert next_schedule_due_at() is None  # the sweeper does not wake for it


# -- overlap ----------------------------------------------------------------------------


def test_overlap_skip_skips_a_due_time_while_the_last_run_is_unfinished():
    with registered(every_minute(overlap="skip")) as (schedule,):
        known(schedule)
        fire_due_schedules(at(1))
        first = runs_of(schedule.id).get()

        fire_due_schedules(at(61))

        assert references(schedule) == [ref(schedule, 0)]
        skipped = row(schedule)
        assert skipped.skipped == 1 and skipped.last_skipped_at == at(60)
        assert skipped.last_run_id == first.pk and skipped.last_due_at == at(60)

        services.cancel(first)
        fire_due_schedules(at(121))

        assert references(schedule) == [ref(schedule, 0), ref(schedule, 120)]
        assert row(schedule).skipped == 1


def test_overlap_allow_runs_beside_an_unfinished_run():
    with registered(every_minute()) as (schedule,):
        known(schedule)
        fire_due_schedules(at(1))
        fire_due_schedules(at(61))

        assert len(references(schedule)) == 2 and row(schedule).skipped == 0


def test_overlap_skip_runs_again_once_the_last_run_finished_by_itself():
    schedule = Schedule("ticking", workflow="scheduled-tick", every=60, overlap="skip")
    with registered(schedule):
        known(schedule)
        fire_due_schedules(at(1))
        assert runs_of("ticking").get().status == "completed"

        fire_due_schedules(at(61))

        assert runs_of("ticking").count() == 2 and row(schedule).skipped == 0


# -- catch_up ---------------------------------------------------------------------------


def test_catch_up_none_drops_the_due_times_missed_by_more_than_the_grace(caplog):
    with registered(every_minute()) as (schedule,):
        known(schedule)
        late = grace().total_seconds() + 1

        with caplog.at_level(logging.WARNING, logger="django_workflows"):
            fire_due_schedules(at(180 + late))  # 10:00, 10:01, 10:02 and 10:03 missed

        assert not runs_of(schedule.id).exists()
        assert row(schedule).next_due_at == at(240)
        assert "are not run" in caplog.text


def test_catch_up_none_still_runs_a_due_time_a_few_seconds_late():
    with registered(every_minute()) as (schedule,):
        known(schedule)
        fire_due_schedules(at(180 + 5))

        assert references(schedule) == [ref(schedule, 180)]


def test_catch_up_latest_runs_only_the_last_missed_due_time():
    with registered(every_minute(catch_up="latest")) as (schedule,):
        known(schedule)
        fire_due_schedules(at(3600 + 30))

        assert references(schedule) == [ref(schedule, 3600)]
        assert row(schedule).next_due_at == at(3660)


def test_catch_up_all_runs_every_missed_due_time_over_as_many_sweeps_as_it_takes():
    with registered(every_minute(catch_up="all")) as (schedule,):
        known(schedule)
        now = at(150 * 60 + 30)  # 151 due times, 10:00 to 12:30

        fire_due_schedules(now)
        assert runs_of(schedule.id).count() == 100 and row(schedule).next_due_at <= now
        fire_due_schedules(now)

        assert runs_of(schedule.id).count() == 151
        assert row(schedule).last_due_at == at(150 * 60)
        assert row(schedule).next_due_at == at(151 * 60)


# -- pause and resume --------------------------------------------------------------------


def test_a_paused_schedule_makes_nothing_and_the_sweeper_does_not_wake_for_it(fake_clock):
    with registered(every_minute()) as (schedule,):
        known(schedule)

        services.pause_schedule(schedule.id)
        fire_due_schedules(at(1))

        assert row(schedule).paused and not runs_of(schedule.id).exists()
        assert next_schedule_due_at() is None


def test_a_resumed_schedule_does_not_run_what_it_missed_while_paused(fake_clock):
    with registered(every_minute(catch_up="all")) as (schedule,):
        known(schedule)
        services.pause_schedule(schedule.id)
        fake_clock.advance(3600 + 30)  # 61 due times pass

        resumed = services.resume_schedule(schedule.id)
        fire_due_schedules(at(3600 + 31))

        assert not resumed.paused and resumed.next_due_at == at(3660)
        assert not runs_of(schedule.id).exists()
        fire_due_schedules(at(3660.5))
        assert references(schedule) == [ref(schedule, 3660)]


def test_pausing_twice_or_resuming_a_running_schedule_changes_nothing(fake_clock):
    with registered(every_minute()) as (schedule,):
        known(schedule)
        services.resume_schedule(schedule.id)
        assert row(schedule).next_due_at == T0  # not moved on

        services.pause_schedule(schedule.id)
        services.pause_schedule(schedule.id)
        assert row(schedule).paused


def test_a_schedule_can_be_paused_before_the_sweep_ever_saw_it(fake_clock):
    with registered(every_minute()) as (schedule,):
        services.pause_schedule(schedule.id)

        assert row(schedule).paused and row(schedule).next_due_at == at(60)


def test_pausing_needs_the_schedules_change_permission(fake_clock):
    with registered(every_minute()) as (schedule,):
        clerk = UserFactory(username="clerk")
        with pytest.raises(NotAllowed, match="permission to pause or resume schedules"):
            services.pause_schedule(schedule.id, user=clerk)
        assert not WorkflowSchedule.objects.filter(pk=schedule.id, paused=True).exists()

        operator = UserFactory(username="operator", permissions=["change_workflowschedule"])
        services.pause_schedule(schedule.id, user=operator)
        services.resume_schedule(schedule.id, user=UserFactory(username="root", superuser=True))

        assert not row(schedule).paused


def test_pausing_an_unknown_schedule_says_so():
    with pytest.raises(UnknownSchedule, match='No schedule "nope" is registered'):
        services.pause_schedule("nope")


# -- the sweep ---------------------------------------------------------------------------


def test_the_sweeper_wakes_for_the_next_due_time_of_a_schedule():
    with registered(every_minute()) as (schedule,):
        known(schedule)

        assert next_deadline_at() == T0


def test_a_whole_sweep_fires_due_schedules_and_says_so():
    with registered(every_minute()) as (schedule,):
        known(schedule)

        report = sweep(at(1))

        assert report.scheduled == 1 and references(schedule) == [ref(schedule, 0)]
        assert str(report).endswith(", 1 scheduled run made")


@pytest.mark.django_db(transaction=True)
def test_each_turn_of_the_sweeper_fires_due_schedules(fake_clock):
    with registered(every_minute()) as (schedule,):
        known(schedule)
        fake_clock.advance(0.2)

        Sweeper(holder="one").turn()

        assert references(schedule) == [ref(schedule, 0)]
        assert WorkflowInstance.objects.get(reference=ref(schedule, 0)).status == "running"


def test_schedules_cost_the_sweep_no_query_when_none_is_registered(django_assert_num_queries):
    assert registry.all_schedules() == []
    with django_assert_num_queries(0):
        assert fire_due_schedules(at(1)) == 0
        assert next_schedule_due_at() is None


def test_a_schedule_that_fails_to_fire_waits_and_stops_neither_the_others_nor_the_sweep(
        monkeypatch, caplog):
    broken, sound = every_minute(), Schedule("sound", workflow="scheduled-report", every=60)
    fire = service_schedules.fire_schedule

    def fire_or_fail(schedule, now):
        if schedule is broken:
            raise RuntimeError("the database said no")
        return fire(schedule, now)

    monkeypatch.setattr(service_schedules, "fire_schedule", fire_or_fail)
    with registered(broken, sound):
        known(broken)
        with caplog.at_level(logging.ERROR, logger="django_workflows"):
            assert fire_due_schedules(at(1)) == 1

        assert references(sound) == [ref(sound, 0)]
        assert "The sweep could not do schedule report-every-minute" in caplog.text
        failure = SweepFailure.objects.get(kind="schedule", key="report-every-minute")
        assert failure.error == "RuntimeError: the database said no"
        assert next_schedule_due_at() == at(60)  # the sweeper does not spin on the broken one


def test_a_cron_schedule_without_cronsim_is_left_to_the_check(monkeypatch):
    monkeypatch.setattr(engine_schedules, "CronSim", None)
    schedule = Schedule("nightly", workflow="scheduled-report", cron="0 3 * * *")
    with registered(schedule):
        assert fire_due_schedules(at(1)) == 0
        assert next_schedule_due_at() is None
        assert not WorkflowSchedule.objects.filter(pk="nightly").exists()
