"""Schedules found and checked at start-up: autodiscovery of ``workflows.py``'s schedules,
``register_schedule``, and the system checks that name a broken schedule (E002, E050-E053).

Broken schedules come from real imports of ``tests/testapp/broken/`` modules, through
``registry.autodiscover("broken.<name>")``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from django_workflows import Schedule, checks, register_schedule, registry
from django_workflows.engine import DefinitionError
from django_workflows.engine import schedules as engine_schedules
from tests.testapp import schedules as testapp_schedules


@pytest.fixture(autouse=True)
def restore_registry():
    """Put the registry back as the app's start-up left it."""
    definitions, origins = dict(registry._definitions), dict(registry._origins)
    schedules, schedule_origins = dict(registry._schedules), dict(registry._schedule_origins)
    errors = list(registry.discovery_errors)
    yield
    registry._definitions.clear()
    registry._definitions.update(definitions)
    registry._origins.clear()
    registry._origins.update(origins)
    registry._schedules.clear()
    registry._schedules.update(schedules)
    registry._schedule_origins.clear()
    registry._schedule_origins.update(schedule_origins)
    registry.discovery_errors[:] = errors


@pytest.fixture
def without_cronsim(monkeypatch):
    monkeypatch.setattr(engine_schedules, "CronSim", None)


def problems(check_id: str) -> list:
    found = [*checks.check_definitions(), *checks.check_schedules()]
    return [problem for problem in found if problem.id == f"django_workflows.{check_id}"]


# -- registration -----------------------------------------------------------------------


def test_autodiscovery_registers_module_level_schedules_and_the_schedules_list():
    registry.autodiscover("broken.schedules")

    found = {s.id: registry._schedule_origins[s.id] for s in registry.all_schedules()}
    assert found == {"broken-nightly": "tests.testapp.broken.schedules",
                     "broken-hourly": "tests.testapp.broken.schedules",
                     "broken-pulse": "tests.testapp.broken.schedules"}
    assert problems("E002") == []


def test_the_testapp_registers_no_schedule_unless_a_cluster_asks_for_them():
    assert registry.all_schedules() == []
    assert testapp_schedules.SCHEDULES == []  # DWF_TEST_SCHEDULES is unset here


def test_register_schedule_by_hand():
    schedule = Schedule("by-hand", workflow="scheduled-report", every=60)

    assert register_schedule(schedule) is schedule
    assert registry.find_schedule("by-hand") is schedule
    assert register_schedule(schedule) is schedule  # the same one again: nothing happens


def test_register_schedule_takes_only_schedules():
    with pytest.raises(DefinitionError, match="register_schedule\\(\\) takes a Schedule"):
        register_schedule("by-hand")


def test_two_schedules_with_one_id_are_a_start_up_error_naming_both_places():
    registry.autodiscover("broken.schedules")
    registry.autodiscover("broken.duplicate_schedule")

    [error] = problems("E002")
    assert 'Schedule id "broken-nightly" is defined twice' in error.msg
    assert "tests.testapp.broken.schedules" in error.msg
    assert error.hint == "in tests.testapp.broken.duplicate_schedule"
    with pytest.raises(DefinitionError, match="defined twice"):
        register_schedule(Schedule("broken-nightly", workflow="scheduled-tick", every=5))


# -- the checks -------------------------------------------------------------------------


def test_a_schedule_of_an_unknown_workflow_is_e050():
    register_schedule(Schedule("orphan", workflow="no-such-workflow", every=60))

    [error] = problems("E050")
    assert error.msg == ('Schedule "orphan" starts workflow "no-such-workflow", which is not '
                         "registered")


def test_a_bad_cron_expression_is_e051_naming_the_schedule():
    registry.autodiscover("broken.bad_cron")

    [error] = problems("E051")
    assert 'Schedule "broken-cron"' in error.msg and '"0 3 * *"' in error.msg
    assert error.hint == "in tests.testapp.broken.bad_cron"


def test_an_unknown_time_zone_is_e052_naming_the_schedule():
    registry.autodiscover("broken.bad_timezone")

    [error] = problems("E052")
    assert 'Schedule "broken-zone"' in error.msg and '"Europe/Atlantis"' in error.msg


def test_a_cron_schedule_without_cronsim_is_made_and_then_is_e053(without_cronsim):
    register_schedule(Schedule("nightly", workflow="scheduled-report", cron="0 3 * * *"))

    [error] = problems("E053")
    assert 'Schedule "nightly" has cron "0 3 * * *"' in error.msg
    assert "django-durable-workflows[cron]" in error.hint


def test_an_every_schedule_needs_no_cronsim(without_cronsim):
    register_schedule(Schedule("pulse", workflow="scheduled-tick", every=30))

    assert problems("E053") == []
    assert Schedule("p", workflow="w", every=30).next_due(
        datetime(2030, 1, 1, 0, 0, 1, tzinfo=UTC)) == datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC)


def test_sound_schedules_pass_every_check():
    registry.autodiscover("broken.schedules")

    assert checks.check_schedules() == []
