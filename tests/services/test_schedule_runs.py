"""Which instances are a schedule's runs (issue 36): those of its own workflow whose
reference is ``"<schedule id>@..."``; only the schedule (trusted code) gives such a
reference, so a user cannot fake a run, nor take a due time's run before the schedule
makes it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_workflows import Schedule, services
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import WorkflowInstance
from django_workflows.services.schedules import fire_due_schedules, runs_of, sync_schedules
from tests.factories import UserFactory
from tests.testapp.schedules import registered

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)
PULSE = Schedule("pulse", workflow="scheduled-tick", every=30)
DUE = "pulse@2030-01-01T10:00:30+00:00"  # the reference of the first due time's run


@pytest.fixture(autouse=True)
def pulse():
    with registered(PULSE):
        yield


def test_an_instance_of_another_workflow_with_a_run_s_reference_is_no_run(db):
    customer = UserFactory(username="customer")

    services.create("wizard", user=customer, reference=DUE)

    assert not runs_of("pulse").exists()


def test_a_user_may_not_give_the_schedule_s_workflow_a_reference_of_its_runs(db):
    customer = UserFactory(username="customer")

    with pytest.raises(WorkflowNotMoved) as refused:
        services.create("scheduled-tick", user=customer, reference=DUE)

    assert refused.value.code == "reference_reserved"
    assert [(problem.field, problem.message) for problem in refused.value.field_errors] == [
        ("reference", 'A reference starting "pulse@" names a run of the schedule "pulse": '
                      "only the schedule gives it.")]
    assert not WorkflowInstance.objects.filter(workflow="scheduled-tick").exists()


def test_any_reference_in_the_schedule_s_namespace_is_refused_to_a_user(db):
    customer = UserFactory(username="customer")

    for reference in ("pulse@", "pulse@not a time", "pulse@@x"):
        with pytest.raises(WorkflowNotMoved):
            services.create("scheduled-tick", user=customer, reference=reference)

    for reference in ("pulse", "pulse-by-hand", "other@2030-01-01T10:00:30+00:00"):
        services.create("scheduled-tick", user=customer, reference=reference)  # allowed


def test_so_a_user_cannot_take_a_due_time_s_run_before_the_schedule_makes_it(db):
    customer = UserFactory(username="customer")
    sync_schedules(T0)
    with pytest.raises(WorkflowNotMoved):
        services.create("scheduled-tick", user=customer, reference=DUE, start=False)

    fire_due_schedules(T0 + timedelta(seconds=30.5))

    run = runs_of("pulse").get()
    assert (run.reference, run.owner) == (DUE, None)


def test_trusted_code_may_make_a_run_by_hand(db):
    made = services.create("scheduled-tick", reference=DUE)

    assert list(runs_of("pulse")) == [made]


def test_the_sweep_s_runs_are_the_schedule_s_runs(db):
    sync_schedules(T0)

    fire_due_schedules(T0 + timedelta(seconds=30.5))
    fire_due_schedules(T0 + timedelta(seconds=60.5))

    assert sorted(runs_of("pulse").values_list("reference", flat=True)) == [
        DUE, "pulse@2030-01-01T10:01:00+00:00"]


def test_an_unregistered_schedule_has_no_runs(db):
    services.create("scheduled-tick", reference="gone@2030-01-01T10:00:30+00:00")

    assert not runs_of("gone").exists()
