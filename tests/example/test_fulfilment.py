"""The example's order fulfilment: payment with retries, the wait for the bank, parallel
preparation, rollback. (The webhook that confirms a payment: test_payment_webhook.py.)"""

from __future__ import annotations

import time

import pytest
from django.core import mail
from django.test import override_settings

from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import WorkflowInstance
from example_project.shop import payments
from example_project.shop.fulfilment import refund_payment
from example_project.shop.models import (
    Charge,
    CourierBooking,
    Payment,
    Refund,
    Shipment,
    StockItem,
    StockReservation,
)

from .factories import ORDER_TOTAL_CENTS, order_state, stock_for_order

pytestmark = pytest.mark.django_db


def provider(**options):
    """The fake payment provider configured with ``options`` (rates, latencies)."""
    return override_settings(SHOP_PAYMENTS=options)


def operation(instance, operation_id):
    return next(op for op in instance.operations if op["id"] == operation_id)


@pytest.fixture(autouse=True)
def stock(db):
    return stock_for_order(on_hand=10)


def test_an_order_is_charged_prepared_shipped_and_emailed(wf):
    order = wf.create("order-fulfilment", state=order_state(), start=True)

    done = wf.reload(order)

    assert done.status == "completed"
    assert done.history == ["payment", "confirmation", "preparation", "shipment", "completion"]
    charge = Charge.objects.get()
    assert (charge.status, charge.amount_cents, charge.reference) == (
        "succeeded", ORDER_TOTAL_CENTS, str(order.pk))
    # The provider's webhook confirmed it: its payload is the order's "payment".
    assert done.state["payment"] == {"charge": charge.id, "amount_cents": ORDER_TOTAL_CENTS,
                                     "currency": "EUR"}
    assert StockItem.objects.get(sku="MUG").reserved == 2
    assert CourierBooking.objects.get(order=str(order.pk)).courier == "Parcelway"
    assert Shipment.objects.get(order=str(order.pk)).parcels == 1
    assert [message.subject for message in mail.outbox] == ["Your order A-1001 is on its way"]


def test_operations_show_their_progress_and_log_lines(wf):
    order = wf.create("order-fulfilment", state=order_state(
        items=[{"sku": "MUG", "quantity": 7}]), start=True)

    shipment = operation(wf.reload(order), "ship-parcels")

    assert shipment["progress"] == {"current": 3, "total": 3, "message": "Printing labels"}
    assert shipment["logs"][:3] == ["Label printed for parcel 1 of 3",
                                    "Label printed for parcel 2 of 3",
                                    "Label printed for parcel 3 of 3"]
    assert shipment["logs"][3].startswith("Handed to Parcelway, tracking number PW")


def test_the_card_is_charged_and_the_bank_shows_its_progress_confirming_it(wf):
    with provider(LATENCY=0.6):
        order = wf.create("order-fulfilment", state=order_state(), start=True)

    payment = operation(wf.reload(order), "charge-card")
    assert payment["status"] == "succeeded"
    assert payment["logs"] == ["Attempt 1: charging 45.70 EUR to pm_card_ok",
                               f"Charge {Charge.objects.get().id} made: the order waits "
                               "for the bank to confirm it"]
    # The provider's side: its bank confirmed the charge, then it sent the webhook.
    bank = WorkflowInstance.objects.get(workflow="fake-bank")
    assert bank.reference == f"bank:{Charge.objects.get().id}"
    assert operation(bank, "confirm-charge")["progress"] == {
        "current": 0.6, "total": 0.6, "message": "Confirmed"}
    assert operation(bank, "send-webhook")["logs"][-1] == "The shop answered 200"
    assert wf.reload(order).status == "completed"


def test_the_order_records_its_charge_at_the_provider(wf):
    order = wf.create("order-fulfilment", state=order_state(), start=True)

    assert Payment.objects.get(order=str(order.pk)).charge == Charge.objects.get().id


def test_an_unavailable_provider_is_retried_with_growing_delays(wf):
    with provider(FAILURE_RATE=1.0):
        order = wf.create("order-fulfilment", state=order_state(), start=True)
        waits = []
        for _ in range(3):
            payment = operation(wf.reload(order), "charge-card")
            waits.append(payment["retry_at"] - wf.clock.time)
            wf.advance(waits[-1])

    payment = operation(wf.reload(order), "charge-card")
    assert waits == [2, 4, 8]  # retry_delay=2, backoff=2
    assert (payment["status"], payment["attempt"]) == ("waiting", 4)
    assert payment["error"]["message"] == (
        "Payment provider unavailable (503); nothing was charged")
    assert not Charge.objects.exists()


def test_the_payment_succeeds_once_the_provider_is_back(wf):
    with provider(FAILURE_RATE=1.0):
        order = wf.create("order-fulfilment", state=order_state(), start=True)

    wf.advance(2)

    assert operation(wf.reload(order), "charge-card")["attempt"] == 2
    assert wf.reload(order).status == "completed"
    assert Charge.objects.count() == 1


def test_retry_delays_stop_growing_at_two_minutes(wf):
    with provider(FAILURE_RATE=1.0):
        order = wf.create("order-fulfilment", state=order_state(), start=True)
        wf.advance(2 + 4 + 8 + 16 + 32 + 64)
        payment = operation(wf.reload(order), "charge-card")

    assert payment["attempt"] == 7
    assert payment["retry_at"] - wf.clock.time == 120  # not 128: max_retry_delay


def test_an_outage_longer_than_the_step_timeout_fails_the_order(wf):
    with provider(FAILURE_RATE=1.0):
        order = wf.create("order-fulfilment", state=order_state(), start=True)
        wf.advance(599)
        assert wf.reload(order).status == "running"

        wf.advance(1)

    assert wf.reload(order).status == "failed"
    assert wf.reload(order).errors == ['Workflow step "payment" timed out after 600s']


def test_a_lost_answer_is_retried_without_charging_twice(wf):
    with provider(LOST_RESPONSE_RATE=1.0):
        order = wf.create("order-fulfilment", state=order_state(), start=True)
    assert operation(wf.reload(order), "charge-card")["error"]["name"] == "ProviderTimeout"

    wf.advance(2)

    assert wf.reload(order).status == "completed"
    assert Charge.objects.count() == 1


def test_a_declined_card_blocks_the_order(wf):
    order = wf.create("order-fulfilment", state=order_state(payment_method="pm_card_declined"),
                      start=True)

    assert wf.reload(order).status == "blocked"
    assert wf.reload(order).errors == [
        "Your card was declined: give another payment method to go on"]


def test_another_card_unblocks_a_declined_order(wf):
    order = wf.create("order-fulfilment", state=order_state(payment_method="pm_card_declined"),
                      start=True)

    wf.update_state(order, order_state(payment_method="pm_card_ok"))

    assert wf.reload(order).status == "completed"
    assert sorted(Charge.objects.values_list("payment_method", "status")) == [
        ("pm_card_declined", "declined"), ("pm_card_ok", "succeeded")]


def test_a_country_without_a_courier_fails_the_preparation(wf):
    order = wf.create("order-fulfilment", state=order_state(address={"country": "IS"}),
                      start=True)

    failed = wf.reload(order)
    assert failed.status == "failed"
    assert failed.errors == ['Parallel workflow step "preparation" failed',
                             'Branch "book-courier": No courier delivers to IS']
    assert StockItem.objects.get(sku="MUG").reserved == 2  # the other branch succeeded


def test_too_little_stock_fails_the_preparation_and_reserves_nothing(wf):
    order = wf.create("order-fulfilment", state=order_state(
        items=[{"sku": "TEE", "quantity": 1},
               {"sku": "MUG", "quantity": 11}]), start=True)

    assert wf.reload(order).errors[1] == 'Branch "reserve-stock": Only 10 of MUG left; 11 ordered'
    assert not StockReservation.objects.exists()
    assert StockItem.objects.get(sku="TEE").reserved == 0


def test_rolling_back_a_failed_order_refunds_it_and_releases_the_stock(wf, operator):
    order = wf.create("order-fulfilment", state=order_state(address={"country": "IS"}),
                      start=True)

    wf.rollback(order, user=operator)  # the back office undoes an order

    assert wf.reload(order).status == "idle"
    assert Refund.objects.get().charge == Charge.objects.get()
    assert StockItem.objects.get(sku="MUG").reserved == 0
    assert not StockReservation.objects.exists()


def test_rolling_back_a_shipped_order_undoes_every_effect(wf, operator):
    order = wf.create("order-fulfilment", state=order_state(), start=True)

    wf.rollback(order, user=operator)  # the back office undoes an order

    assert wf.reload(order).status == "idle"
    assert Refund.objects.count() == 1
    assert Shipment.objects.get().status == "voided"
    assert CourierBooking.objects.get().status == "cancelled"
    assert StockItem.objects.get(sku="MUG").reserved == 0
    wf.assert_events(order, ["rollback", "compensate", "compensate", "compensate", "compensate"],
                     contains=True)


def test_a_rollback_after_a_lost_answer_still_finds_the_charge(wf, operator):
    with provider(LOST_RESPONSE_RATE=1.0):  # charged at once, but no attempt hears of it
        order = wf.create("order-fulfilment", state=order_state(), start=True)
        wf.advance(600)
    assert wf.reload(order).status == "failed"

    wf.rollback(order, user=operator)  # the back office undoes an order

    assert Refund.objects.get().charge == Charge.objects.get()


def test_an_order_without_a_country_is_refused_naming_the_field(wf):
    with pytest.raises(WorkflowNotMoved) as refused:
        wf.create("order-fulfilment", state=order_state(address={"country": "Germany"}))

    assert [error.field for error in refused.value.field_errors] == ["address.country"]


class RollbackContext:
    """What a worker gives a rollback: the instance id, a log, a sleep in which the bank
    confirms what it is confirming."""

    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        self.logs: list[str] = []

    def log(self, line: str) -> None:
        self.logs.append(line)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
        for charge in payments.charges_for(self.instance_id):
            payments.confirm(charge.id)


def pending_charge(method: str = "pm_card_ok") -> Charge:
    """A charge the bank has not confirmed (its confirmation is not run here)."""
    return payments.create_charge(amount_cents=500, currency="EUR", payment_method=method,
                                  reference="order-1", idempotency_key=f"order-1-{method}",
                                  merchant="shop")


def test_a_rollback_waits_for_a_charge_the_bank_is_confirming_then_refunds_it():
    charge = pending_charge()
    assert charge.status == Charge.PENDING
    ctx = RollbackContext("order-1")

    refund_payment(None, ctx)

    assert Refund.objects.get(charge=charge).amount_cents == 500
    assert ctx.logs[0] == f"Waiting for the bank to confirm {charge.id} before refunding it"


class SilentBankContext(RollbackContext):
    """A worker's context on a day the bank confirms nothing."""

    def __init__(self, instance_id: str) -> None:
        super().__init__(instance_id)
        self.slept = 0.0

    def sleep(self, seconds: float) -> None:
        self.slept += seconds


@override_settings(SHOP_PAYMENTS={"SLOW_LATENCY": 10.0})
def test_a_rollback_stops_waiting_for_a_bank_that_never_confirms():
    # It waited forever: a rollback has no timeout to stop it.
    charge = pending_charge()
    ctx = SilentBankContext("order-1")

    with pytest.raises(payments.ProviderError, match=f"has not confirmed {charge.id} after 40s"):
        refund_payment(None, ctx)

    assert ctx.slept == 40
    assert not Refund.objects.exists()


def test_a_rollback_cancels_a_charge_the_bank_will_never_confirm():
    charge = pending_charge("pm_card_unconfirmed")
    assert charge.status == Charge.REQUIRES_ACTION
    ctx = RollbackContext("order-1")

    refund_payment({"charge": charge.id}, ctx)

    assert payments.retrieve_charge(charge.id).status == Charge.CANCELLED
    assert not Refund.objects.exists()
    assert ctx.logs == [f"Cancelled {charge.id}, which the bank had not confirmed"]


def _outages_seen_by_a_forked_worker(queue) -> None:
    queue.put([payments._happens(0.5) for _ in range(32)])


def test_forked_workers_do_not_see_the_same_outages() -> None:
    # django-q2 forks its workers from one process: with one random state copied into each,
    # every worker's first charge failed together (the demo's slow order then waited a
    # minute of backoff before its progress showed).
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_outages_seen_by_a_forked_worker, args=(queue,))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    seen = [queue.get(timeout=30) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)

    assert seen[0] != seen[1]  # the same 32 draws of a fair coin: 1 in 4 billion
