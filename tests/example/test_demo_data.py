"""manage.py workflows_demo_data: demo users and instances in every status."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core import mail
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from django_workflows.conf import DJANGO_Q_RUNNER, workflow_settings
from django_workflows.models import WorkflowInstance, WorkflowTask
from django_workflows.reading.waiting import waiting_of
from example_project.shop.models import Customer, Invoice

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
    assert set(WorkflowInstance.objects.values_list("workflow", flat=True)) == {
        "onboarding", "identity-check", "order-fulfilment", "expense-approval",
        "fake-bank",  # the provider's side of each charge
        "payment-reminder",  # of the declined card
        "invoice-run"}


def test_every_expense_claim_is_numbered_in_the_order_it_was_made(queued_work):
    demo_data()

    claims = WorkflowInstance.objects.filter(workflow="expense-approval").order_by("created_at")
    year = timezone.localdate().year
    assert [c.reference for c in claims] == [f"E-{year}-{n:04d}"
                                             for n in range(1, len(claims) + 1)]


def test_the_paid_orders_were_confirmed_by_the_providers_webhook(queued_work):
    demo_data()

    paid = WorkflowInstance.objects.get(state__order_number="D-1001")
    assert paid.status == "completed"
    assert paid.history[:2] == ["payment", "confirmation"]
    assert paid.state["payment"]["charge"].startswith("ch_")


def test_the_declined_order_waits_for_a_card_and_its_reminder_for_its_time(queued_work):
    demo_data()

    declined = WorkflowInstance.objects.get(state__order_number="D-1002")
    assert declined.status == "blocked"
    reminder = WorkflowInstance.objects.get(workflow="payment-reminder")
    assert reminder.reference == f"remind:{declined.pk}:pm_card_declined"
    assert waiting_of(reminder.snap).kind == "timer"  # the workers fire it


def test_one_onboarding_waits_for_the_email_link_sent_to_alice(queued_work):
    demo_data()

    [waiting] = WorkflowInstance.objects.filter(workflow="onboarding", current_step="email",
                                                status="running")
    assert waiting.owner.username == "alice"
    assert waiting_of(waiting.snap).name == "email-confirmed"
    assert "alice@example.com" in [m.to[0] for m in mail.outbox
                                   if m.subject == "Confirm your email address"]
    # Bob's completed onboarding had its link opened: his address is confirmed.
    assert Customer.objects.get(email="bob@example.com").email_confirmed_at is not None


def test_the_slow_order_leaves_its_payment_to_a_worker(queued_work):
    demo_data()

    slow = WorkflowInstance.objects.get(state__order_number="D-1004")
    assert slow.status == "running"
    assert [(op["id"], op["status"]) for op in slow.operations] == [("charge-card", "queued")]


def test_an_invoice_due_yesterday_asks_the_managers_about_its_declined_line(queued_work):
    demo_data()

    run = WorkflowInstance.objects.get(workflow="invoice-run", reference="INV-1001")
    task = WorkflowTask.objects.get(instance=run, status="open")
    assert (task.title, task.candidates) == ("Invoice INV-1001: 1 line declined",
                                             ["group:managers"])
    assert "the Station café's T-shirts" in \
        task.asked["form"]["properties"]["decision"]["description"]
    assert "managers" in run.owner.groups.values_list("name", flat=True)  # the operator


def test_an_invoice_due_in_a_minute_leaves_its_run_to_a_worker(queued_work):
    with override_settings(SHOP_TIMES={"INVOICE_DUE": 60}):
        demo_data()

    invoice = Invoice.objects.get(number="INV-1002")
    assert 0 < (invoice.due_at - timezone.now()).total_seconds() <= 60
    run = WorkflowInstance.objects.get(workflow="invoice-run", reference="INV-1002")
    assert [(op["id"], op["status"]) for op in run.operations] == [
        ("charge-invoice", "queued")]


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

    assert "the slow order, the rollback and the sleeping invoice run are left out" in output
    assert not WorkflowInstance.objects.filter(status="rolling-back").exists()
