"""manage.py workflows_demo_data: demo users and instances in every status."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import override_settings

from django_workflows.conf import DJANGO_Q_RUNNER, workflow_settings
from django_workflows.models import WorkflowInstance

# Committed transactions, as when the command runs: work is handed out after commit.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_q2]


@pytest.fixture
def queued_work():
    """Background work goes to django-q2's queue; no worker runs it in these tests."""
    with override_settings(DJANGO_WORKFLOWS={**workflow_settings.user_settings,
                                             "RUNNER": DJANGO_Q_RUNNER}):
        yield


def demo_data():
    out = StringIO()
    call_command("workflows_demo_data", stdout=out)
    return out.getvalue()


def test_it_creates_an_operator_and_two_customers_and_prints_their_passwords(queued_work):
    output = demo_data()

    assert "operator   password: operator-demo   operator (admin; groups operators, " \
           "managers)" in output
    operator = authenticate(username="operator", password="operator-demo")
    assert operator.is_staff and not operator.is_superuser
    assert sorted(operator.groups.values_list("name", flat=True)) == ["managers", "operators"]
    for name in ("alice", "bob"):
        assert f"{name:<10} password: {name}-demo" in output
        user = authenticate(username=name, password=f"{name}-demo")
        assert not user.is_staff


def test_it_creates_instances_in_every_status(queued_work):
    demo_data()

    statuses = set(WorkflowInstance.objects.filter(parent=None).values_list("status", flat=True))
    assert statuses == {"idle", "running", "blocked", "failed", "rolling-back", "cancelled",
                        "completed"}
    assert {"onboarding", "order-fulfilment", "expense-approval"} == set(
        WorkflowInstance.objects.values_list("workflow", flat=True)) - {"identity-check"}


def test_the_slow_order_leaves_its_payment_to_a_worker(queued_work):
    demo_data()

    slow = WorkflowInstance.objects.get(state__order_number="D-1004")
    assert slow.status == "running"
    assert [(op["id"], op["status"]) for op in slow.operations] == [("charge-card", "queued")]


def test_a_failed_order_is_left_rolling_back_for_a_worker(queued_work):
    demo_data()

    assert WorkflowInstance.objects.get(state__order_number="D-1005").status == "rolling-back"


def test_running_it_again_creates_no_more_instances(queued_work):
    demo_data()
    count = WorkflowInstance.objects.count()

    output = demo_data()

    assert WorkflowInstance.objects.count() == count
    assert "none were created" in output
    assert authenticate(username="alice", password="alice-demo") is not None


def test_without_workers_it_leaves_out_the_live_work():
    output = demo_data()

    assert "the slow order and the rollback are left out" in output
    assert not WorkflowInstance.objects.filter(status="rolling-back").exists()
