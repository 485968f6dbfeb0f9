"""Schedules in the engine: what a definition accepts, its due times (cron in a time zone,
through changes of clocks; every= from the epoch), and what a sweep runs by catch_up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_workflows import Schedule, Step, Workflow
from django_workflows.engine import DefinitionError
from django_workflows.engine.schedules import CATCH_UP_BATCH, CATCH_UP_LIMIT, due_of

GRACE = timedelta(seconds=15)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def first(schedule: Schedule, after: datetime, count: int) -> list[str]:
    times = schedule.due_times(after)
    return [next(times).isoformat() for _ in range(count)]


def berlin(cron: str, **options) -> Schedule:
    return Schedule("berlin", workflow="w", cron=cron, timezone="Europe/Berlin", **options)


# -- the definition ---------------------------------------------------------------------


def test_a_schedule_takes_the_workflow_itself_or_its_id():
    workflow = Workflow(id="billing", steps=[Step("run")])

    assert Schedule("a", workflow=workflow, every=60).workflow_id == "billing"
    assert Schedule("b", workflow="billing", every=60).workflow_id == "billing"


@pytest.mark.parametrize(("options", "message"), [
    ({}, "needs cron (an expression) or every"),
    ({"cron": "* * * * *", "every": 60}, "and only one of them"),
    ({"every": 0}, "every must be a whole number of seconds, at least 1"),
    ({"every": 1.5}, "every must be a whole number of seconds"),
    ({"every": "60"}, "every must be a number of seconds or a timedelta"),
    ({"every": 60, "overlap": "queue"}, 'overlap must be "allow" or "skip"'),
    ({"every": 60, "catch_up": "some"}, 'catch_up must be "none", "latest" or "all"'),
    ({"every": 60, "start": "yes"}, "start must be True or False"),
    ({"every": 60, "state": [1]}, "state must be a dict or a callable"),
])
def test_a_bad_option_fails_when_the_schedule_is_made_naming_it(options, message):
    with pytest.raises(DefinitionError) as error:
        Schedule("nightly", workflow="w", **options)

    assert 'Schedule "nightly"' in str(error.value)
    assert message in str(error.value)


@pytest.mark.parametrize("cron", ["0 3 * *", "61 * * * *", "0 3 * * MON-XYZ", "0 0 31 2 *",
                                  "0 0 0 1 * *"])
def test_a_bad_cron_expression_fails_as_bad_cron(cron):
    with pytest.raises(DefinitionError) as error:
        Schedule("nightly", workflow="w", cron=cron)

    assert error.value.kind == "bad_cron"
    assert 'Schedule "nightly"' in str(error.value) and cron in str(error.value)


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../etc/passwd", "", None])
def test_an_unknown_time_zone_fails_as_unknown_timezone(zone):
    with pytest.raises(DefinitionError) as error:
        Schedule("nightly", workflow="w", cron="0 3 * * *", timezone=zone)

    assert error.value.kind == "unknown_timezone"
    assert 'Schedule "nightly"' in str(error.value)


@pytest.mark.parametrize("bad_id", ["", "a@b", "x" * 171, 7])
def test_a_schedule_id_must_fit_in_its_runs_references(bad_id):
    with pytest.raises(DefinitionError, match="Schedule id"):
        Schedule(bad_id, workflow="w", every=60)


def test_cron_aliases_read_as_their_expressions():
    assert Schedule("d", workflow="w", cron="@daily").cron == "0 0 * * *"
    assert Schedule("h", workflow="w", cron="  @Hourly ").cron == "0 * * * *"


# -- due times --------------------------------------------------------------------------


def test_every_counts_from_the_epoch_so_any_process_finds_the_same_due_times():
    schedule = Schedule("e", workflow="w", every=timedelta(minutes=10))

    assert first(schedule, utc(2026, 5, 1, 12, 7, 30), 2) == [
        "2026-05-01T12:10:00+00:00", "2026-05-01T12:20:00+00:00"]
    assert schedule.next_due(utc(2026, 5, 1, 12, 10)) == utc(2026, 5, 1, 12, 20)  # strictly


def test_due_times_are_strictly_after_the_given_time_and_in_utc():
    schedule = Schedule("c", workflow="w", cron="0 3 * * *", timezone="Europe/Berlin")

    due = schedule.next_due(utc(2026, 1, 10, 2, 0))  # 03:00 in Berlin, exactly

    assert due == utc(2026, 1, 11, 2, 0) and due.tzinfo is UTC


def test_cron_is_read_in_the_schedules_time_zone_summer_and_winter():
    schedule = berlin("0 3 1 * *")

    assert first(schedule, utc(2026, 5, 15), 2) == ["2026-06-01T01:00:00+00:00",
                                                    "2026-07-01T01:00:00+00:00"]
    assert first(schedule, utc(2026, 11, 15), 1) == ["2026-12-01T02:00:00+00:00"]


def test_a_time_the_change_to_summer_time_skips_runs_at_the_first_minute_after_it():
    # 2026-03-29: Berlin's clocks go from 02:00 to 03:00; 02:30 does not exist that day.
    assert first(berlin("30 2 * * *"), utc(2026, 3, 28, 12), 2) == [
        "2026-03-29T01:00:00+00:00",  # 03:00 CEST
        "2026-03-30T00:30:00+00:00"]  # 02:30 CEST


def test_a_time_the_change_back_repeats_runs_once():
    # 2026-10-25: Berlin's clocks go from 03:00 back to 02:00; 02:30 comes twice.
    assert first(berlin("30 2 * * *"), utc(2026, 10, 24, 12), 2) == [
        "2026-10-25T00:30:00+00:00",  # 02:30 CEST, the first of the two
        "2026-10-26T01:30:00+00:00"]  # 02:30 CET


def test_a_step_through_the_repeated_hour_counts_real_time():
    # Every 30 minutes: the repeated hour has its own due times, as Debian's cron runs it.
    assert first(berlin("*/30 * * * *"), utc(2026, 10, 24, 23, 59), 4) == [
        "2026-10-25T00:00:00+00:00", "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:00:00+00:00", "2026-10-25T01:30:00+00:00"]


def test_each_due_time_is_found_again_from_just_before_it():
    schedule = berlin("30 2 * * *")
    for due in schedule.latest_due(utc(2026, 3, 1), utc(2026, 11, 30), 300):
        assert schedule.is_due_time(due)
    assert not schedule.is_due_time(utc(2026, 3, 29, 0, 30))


def test_latest_due_gives_the_last_ones_oldest_first():
    schedule = Schedule("m", workflow="w", cron="0 * * * *")

    assert schedule.latest_due(utc(2026, 1, 1), utc(2026, 1, 3, 5, 30), 3) == [
        utc(2026, 1, 3, 3), utc(2026, 1, 3, 4), utc(2026, 1, 3, 5)]
    assert schedule.latest_due(utc(2026, 1, 3, 5), utc(2026, 1, 3, 5), 3) == [utc(2026, 1, 3, 5)]
    assert schedule.latest_due(utc(2026, 1, 3, 5, 1), utc(2026, 1, 3, 5, 59), 3) == []


def test_latest_due_over_a_year_of_minutes_is_quick():
    schedule = Schedule("m", workflow="w", cron="* * * * *", timezone="Europe/Berlin")

    found = schedule.latest_due(utc(2025, 1, 1), utc(2026, 1, 1), 5)

    assert found == [utc(2025, 12, 31, 23, 56) + timedelta(minutes=n) for n in range(5)]


def test_the_reference_names_the_schedule_and_the_due_time_in_utc():
    schedule = berlin("0 3 * * *")
    due = schedule.next_due(utc(2026, 1, 1))

    assert schedule.reference(due) == "berlin@2026-01-01T02:00:00+00:00"
    assert due_of(schedule.reference(due)) == due
    assert due_of("an order number") is None


def test_a_state_callable_gets_the_due_time_in_the_schedules_time_zone():
    schedule = berlin("0 3 1 * *", state=lambda at: {"period": f"{at:%Y-%m}", "hour": at.hour})

    assert schedule.state_at(utc(2026, 6, 1, 1)) == {"period": "2026-06", "hour": 3}


def test_a_state_dict_is_copied_for_each_run():
    shared = {"items": []}
    schedule = Schedule("s", workflow="w", every=60, state=shared)

    schedule.state_at(utc(2026, 1, 1))["items"].append(1)

    assert schedule.state_at(utc(2026, 1, 1)) == {"items": []}
    assert Schedule("n", workflow="w", every=60).state_at(utc(2026, 1, 1)) is None


# -- what a sweep runs, by catch_up ------------------------------------------------------


def every_minute(catch_up: str) -> Schedule:
    return Schedule("m", workflow="w", every=60, catch_up=catch_up)


def test_on_time_every_policy_runs_the_one_due_time():
    for catch_up in ("none", "latest", "all"):
        plan = every_minute(catch_up).plan(utc(2026, 1, 1, 10), utc(2026, 1, 1, 10, 0, 1),
                                           grace=GRACE)
        assert plan.run == (utc(2026, 1, 1, 10),) and plan.next_due == utc(2026, 1, 1, 10, 1)
        assert not plan.dropped


def test_catch_up_none_runs_a_due_time_a_little_late_but_not_one_older_than_the_grace():
    schedule = every_minute("none")

    late = schedule.plan(utc(2026, 1, 1, 10), utc(2026, 1, 1, 10, 0, 14), grace=GRACE)
    missed = schedule.plan(utc(2026, 1, 1, 10), utc(2026, 1, 1, 10, 0, 16), grace=GRACE)

    assert late.run == (utc(2026, 1, 1, 10),)
    assert missed.run == () and missed.dropped
    assert missed.next_due == utc(2026, 1, 1, 10, 1)


def test_catch_up_none_after_an_outage_runs_the_latest_only_if_it_is_within_the_grace():
    schedule = every_minute("none")

    plan = schedule.plan(utc(2026, 1, 1, 10), utc(2026, 1, 1, 13, 0, 5), grace=GRACE)

    assert plan.run == (utc(2026, 1, 1, 13),) and plan.dropped


def test_catch_up_latest_runs_the_last_missed_due_time():
    plan = every_minute("latest").plan(utc(2026, 1, 1, 10), utc(2026, 1, 1, 13, 0, 30),
                                       grace=GRACE)

    assert plan.run == (utc(2026, 1, 1, 13),)
    assert plan.next_due == utc(2026, 1, 1, 13, 1) and plan.dropped


def test_catch_up_all_runs_every_missed_due_time_oldest_first_in_batches():
    schedule = every_minute("all")
    now = utc(2026, 1, 1, 12, 30, 30)

    plan = schedule.plan(utc(2026, 1, 1, 10), now, grace=GRACE)

    assert len(plan.run) == CATCH_UP_BATCH and plan.run[0] == utc(2026, 1, 1, 10)
    assert plan.next_due == plan.run[-1] + timedelta(minutes=1) <= now  # the next turn goes on
    rest = schedule.plan(plan.next_due, now, grace=GRACE)
    assert rest.run[0] == plan.next_due and rest.run[-1] == utc(2026, 1, 1, 12, 30)
    assert len(plan.run) + len(rest.run) == 151 and rest.next_due > now


def test_catch_up_all_is_bounded_to_the_latest_missed_due_times():
    schedule = Schedule("s", workflow="w", every=1, catch_up="all")
    now = utc(2026, 1, 8)

    plan = schedule.plan(utc(2026, 1, 1), now, grace=GRACE)  # a week of seconds missed

    assert plan.dropped
    assert plan.run[0] == now - timedelta(seconds=CATCH_UP_LIMIT - 1)
