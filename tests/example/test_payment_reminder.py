"""A declined card starts a reminder: a timer, then an email to the customer, unless the
order was paid or cancelled meanwhile."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core import mail

from django_workflows.models import WorkflowInstance
from django_workflows.reading.waiting import waiting_of
from example_project.shop.reminders import payment_reminder

from .factories import order_state, stock_for_order

pytestmark = pytest.mark.django_db

AFTER = payment_reminder.step("wait").wait.after  # SHOP_TIMES["PAYMENT_REMINDER"]
SUBJECT = "Your order A-1001 waits for another card"


@pytest.fixture(autouse=True)
def stock(db):
    return stock_for_order(on_hand=10)


@pytest.fixture
def declined(wf):
    return wf.create("order-fulfilment", start=True,
                     state=order_state(payment_method="pm_card_declined"))


def reminder() -> WorkflowInstance:
    return WorkflowInstance.objects.get(workflow="payment-reminder")


def test_a_declined_card_starts_a_reminder_whose_timer_waits(wf, declined):
    started = reminder()

    assert started.reference == f"remind:{declined.pk}:pm_card_declined"
    shown = waiting_of(started.snap)
    assert shown.kind == "timer"
    assert shown.until == datetime.fromtimestamp(wf.clock.time + AFTER, tz=UTC)
    assert mail.outbox == []


def test_the_reminder_emails_the_customer_when_its_timer_fires(wf, declined):
    wf.advance(AFTER - 1)
    assert mail.outbox == []

    wf.advance(1)

    assert [m.subject for m in mail.outbox] == [SUBJECT]
    assert mail.outbox[0].to == ["ann@example.com"]
    assert reminder().status == "completed"
    wf.assert_events(reminder(), ["timer-wait", "timer-fire", "step-enter"], contains=True)


def test_an_order_paid_meanwhile_is_not_reminded(wf, declined):
    wf.update_state(declined, order_state(payment_method="pm_card_ok"))  # another card
    assert wf.reload(declined).status == "completed"
    sent = len(mail.outbox)  # the order's own "on its way"

    wf.advance(AFTER)

    assert len(mail.outbox) == sent
    remind = next(op for op in reminder().operations if op["id"] == "email-reminder")
    assert remind["logs"] == ["The order no longer waits for another card: no reminder"]


def test_a_decline_seen_again_starts_no_second_reminder(wf, declined, operator):
    wf.retry(declined, user=operator)  # the same card, declined again

    assert wf.reload(declined).status == "blocked"
    assert WorkflowInstance.objects.filter(workflow="payment-reminder").count() == 1
