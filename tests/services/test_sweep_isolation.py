"""One bad row never stops the sweep (issue 36, part 3): each item of a sweep is its own
unit of work with its own failure; an item that fails again and again is set aside
(quarantined) with its error, not tried in a hot loop, and shown; the others go on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from django.core.checks import run_checks
from django.utils import timezone

from django_workflows import Schedule, Step, Timer, Transition, Workflow, registry, services
from django_workflows.models import Deadline, SweepFailure, SweepLease, WorkflowInstance
from django_workflows.services.schedules import sync_schedules
from django_workflows.services.sweep import LEASE
from tests.testapp.schedules import registered, tick

pytestmark = pytest.mark.django_db

ORIGIN = "tests.services.test_sweep_isolation"


def timer_flow(version: int = 1, migrate=None) -> Workflow:
    return Workflow(id="doomed", version=version, migrate=migrate,
                    steps=[Step("wait", wait=Timer(after=60)), Step("after")],
                    transitions=[Transition("wait", "after")])


@pytest.fixture
def doomed() -> Iterator[WorkflowInstance]:
    """An instance waiting on a timer, of a workflow a deploy then removed."""
    registry.register(timer_flow(), origin=ORIGIN)
    instance = services.create("doomed", start=True)
    registry.unregister("doomed")
    try:
        yield instance
    finally:
        registry.unregister("doomed")


def reminder_waiting() -> WorkflowInstance:
    return services.create("reminder", start=True)  # a 3-day timer


def later(days: float = 4) -> datetime:
    return timezone.now() + timedelta(days=days)


def test_an_unregistered_workflow_s_deadline_stops_no_other_timer_nor_schedule(doomed):
    other = reminder_waiting()
    with registered(Schedule("daily-tick", workflow=tick, every=3600, catch_up="latest")):
        sync_schedules(timezone.now() - timedelta(hours=2))

        report = services.sweep(now=later())

    assert WorkflowInstance.objects.get(pk=other.pk).current_step == "remind"
    assert report.scheduled == 1  # the schedule after the deadlines ran too
    assert SweepLease.objects.get(name=LEASE).swept_at is not None
    failure = SweepFailure.objects.get()
    assert (failure.kind, failure.instance_id, failure.failures) == ("deadline", doomed.pk, 1)
    assert failure.error == 'UnknownWorkflow: No workflow "doomed" is registered'
    assert report.failed == 1


def test_a_bumped_version_without_its_migration_is_set_aside_and_the_others_fire(doomed):
    registry.register(timer_flow(version=2), origin=ORIGIN)
    other = reminder_waiting()

    services.sweep(now=later())

    assert WorkflowInstance.objects.get(pk=other.pk).current_step == "remind"
    failure = SweepFailure.objects.get()
    assert failure.error.startswith("MigrationRequired: Workflow \"doomed\" requires a migration")


def test_a_failing_item_waits_longer_each_time_then_is_set_aside(doomed, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SWEEP_RETRIES": 3}
    now = later()
    services.sweep(now=now)
    first = SweepFailure.objects.get()
    assert first.retry_at > now and first.quarantined_at is None

    services.sweep(now=now + timedelta(seconds=0.5))  # not again before its retry time
    assert SweepFailure.objects.get().failures == 1

    for _ in range(5):
        now = SweepFailure.objects.get().retry_at or now
        services.sweep(now=now + timedelta(seconds=0.1))

    failure = SweepFailure.objects.get()
    assert failure.failures == 3  # then set aside: not tried again
    assert failure.quarantined_at is not None and failure.retry_at is None
    assert Deadline.objects.filter(instance=doomed).exists()  # nothing lost


def test_an_item_set_aside_is_tried_again_when_someone_says_so(doomed, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SWEEP_RETRIES": 1}
    services.sweep(now=later())
    assert SweepFailure.objects.get().quarantined_at is not None
    registry.register(timer_flow(), origin=ORIGIN)  # the deploy that brings it back

    released = services.retry_set_aside(SweepFailure.objects.all())
    services.sweep(now=later())

    assert released == 1
    assert WorkflowInstance.objects.get(pk=doomed.pk).current_step == "after"
    assert not SweepFailure.objects.exists()


def test_an_item_that_recovers_by_itself_leaves_no_failure_behind(doomed):
    services.sweep(now=later())
    registry.register(timer_flow(), origin=ORIGIN)

    services.sweep(now=later(5))

    assert WorkflowInstance.objects.get(pk=doomed.pk).current_step == "after"
    assert not SweepFailure.objects.exists()


def test_a_system_check_names_instances_whose_workflow_or_version_the_code_lacks(doomed):
    registry.register(Workflow(id="newer", version=3, steps=[Step("s")]), origin=ORIGIN)
    try:
        old = services.create("newer")
        WorkflowInstance.objects.filter(pk=old.pk).update(version=2)

        found = [m for m in run_checks(databases=["default"])
                 if m.id == "django_workflows.W032"]
    finally:
        registry.unregister("newer")

    assert len(found) == 1, found
    message = found[0].msg
    assert 'workflow "doomed", which is not registered' in message and str(doomed.pk) in message
    assert 'workflow "newer" at version 2, which version 3 cannot migrate' in message
    assert str(old.pk) in message
