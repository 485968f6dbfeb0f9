"""The order waits for the bank, and the payment provider's signed webhook moves it on.

The order's ``confirmation`` step waits for the signal ``payment-confirmed`` by its
charge's id; the provider POSTs ``charge.succeeded`` to ``/hooks/payments/``, signed with
the shared secret, and the shop's webhook view turns it into that signal. These tests send
the provider's requests themselves, through Django's test client (and once over a real
socket, from the provider's own code), for an order whose bank never confirms on its own
(``pm_card_unconfirmed``): they choose when the webhook comes.
"""

from __future__ import annotations

import json
import time

import pytest
from django.core import mail

from django_workflows import services
from django_workflows.exceptions import NotAllowed
from django_workflows.models import WorkflowInstance, WorkflowSignal
from django_workflows.reading.waiting import waiting_of
from django_workflows.webhooks import signature
from example_project.shop import bank, payments
from example_project.shop.fulfilment import fulfilment
from example_project.shop.models import Charge, Payment, Refund

from .factories import ORDER_TOTAL_CENTS, order_state, stock_for_order

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.example.urls")]

SECRET = payments.webhook_secret()  # the example's default: tests/settings.py sets none
TIMEOUT = fulfilment.step("confirmation").wait.timeout


@pytest.fixture(autouse=True)
def stock(db):
    return stock_for_order(on_hand=10)


@pytest.fixture
def waiting(wf):
    """An order whose card was charged and which waits for the bank's confirmation."""
    order = wf.create("order-fulfilment", start=True,
                      state=order_state(payment_method="pm_card_unconfirmed"))
    assert (wf.reload(order).status, wf.reload(order).current_step) == ("running",
                                                                         "confirmation")
    return order


def confirmed(charge: Charge) -> Charge:
    """The bank confirms the charge (the provider's own record of it)."""
    Charge.objects.filter(pk=charge.pk).update(status=Charge.SUCCEEDED)
    return payments.retrieve_charge(charge.pk)


def deliver(client, event: dict, *, secret: str = SECRET, timestamp: int | None = None,
            body: str | None = None):
    """The provider's POST: ``event`` as JSON, signed with ``secret`` (``body`` is sent
    instead, with the event's signature, to alter it on the way)."""
    signed = json.dumps(event)
    return client.post("/hooks/payments/", signed if body is None else body,
                       content_type="application/json",
                       headers={"Webhook-Signature": signature(signed, secret,
                                                               timestamp=timestamp)})


@pytest.fixture
def provider(client, django_capture_on_commit_callbacks):
    """Sends the bank's confirmation of the only charge, as the provider does; the work
    it hands out (the order's next steps) runs at once."""
    def send(**options):
        event = bank.succeeded_event(confirmed(Charge.objects.get()))
        with django_capture_on_commit_callbacks(execute=True):
            return deliver(client, event, **options)
    return send


def test_an_order_waits_for_the_bank_by_its_charges_id(wf, waiting):
    order = wf.reload(waiting)

    charge = Charge.objects.get()
    assert Payment.objects.get(order=str(order.pk)).charge == charge.id
    shown = waiting_of(order.snap)
    assert (shown.kind, shown.name, shown.correlation) == ("signal", "payment-confirmed",
                                                           charge.id)
    assert "payment" not in order.state
    wf.assert_events(order, ["step-enter", "signal-wait"], contains=True)


def test_a_signed_webhook_moves_the_waiting_order_on(wf, waiting, provider):
    answer = provider()

    assert answer.status_code == 200
    [delivery] = answer.json()["deliveries"]
    charge = Charge.objects.get()
    assert (delivery["outcome"], delivery["message_id"], delivery["instances"]) == (
        "taken", f"evt_{charge.id.removeprefix('ch_')}", [str(waiting.pk)])
    order = wf.reload(waiting)
    assert order.status == "completed"
    assert order.history == ["payment", "confirmation", "preparation", "shipment",
                             "completion"]
    assert order.state["payment"] == {"charge": charge.id, "amount_cents": ORDER_TOTAL_CENTS,
                                      "currency": "EUR"}


def test_a_forged_signature_changes_nothing(wf, waiting, provider):
    answer = provider(secret="whsec_guessed")

    assert (answer.status_code, answer.json()["code"]) == (403, "signature_mismatch")
    assert wf.reload(waiting).current_step == "confirmation"
    assert not WorkflowSignal.objects.exists()


def test_a_body_changed_after_signing_changes_nothing(wf, waiting, provider):
    event = bank.succeeded_event(Charge.objects.get())
    event["data"]["object"]["amount"] = 1  # a cheaper order, on the way

    answer = provider(body=json.dumps(event))

    assert (answer.status_code, answer.json()["code"]) == (403, "signature_mismatch")
    assert wf.reload(waiting).current_step == "confirmation"


def test_an_old_signed_request_sent_again_is_refused(wf, waiting, provider):
    answer = provider(timestamp=int(time.time()) - 3600)

    assert (answer.status_code, answer.json()["code"]) == (403, "signature_expired")
    assert wf.reload(waiting).current_step == "confirmation"


def test_the_providers_retry_is_answered_as_a_repeat_and_changes_nothing(wf, waiting,
                                                                         provider):
    provider()
    events = len(wf.events(waiting))

    again = provider()

    assert again.status_code == 200
    assert again.json()["deliveries"][0]["outcome"] == "repeated"
    assert len(wf.events(waiting)) == events
    assert WorkflowSignal.objects.count() == 1


def test_an_event_the_shop_does_not_need_is_acknowledged_and_changes_nothing(client, wf,
                                                                             waiting):
    answer = deliver(client, {"id": "evt_refund_1", "type": "charge.refunded"})

    assert (answer.status_code, answer.json()["deliveries"]) == (200, [])
    assert wf.reload(waiting).current_step == "confirmation"


def test_an_invoice_runs_charge_is_acknowledged_and_signals_no_order(client, wf, waiting):
    # The invoice run counts a line charged once the provider took it: no order waits.
    invoice_charge = confirmed(payments.create_charge(
        amount_cents=990, currency="EUR", payment_method="pm_card_ok",
        reference="invoice:INV-7001", idempotency_key="invoice-1-line-1", merchant="shop"))

    answer = deliver(client, bank.succeeded_event(invoice_charge))

    assert (answer.status_code, answer.json()["deliveries"]) == (200, [])
    assert not WorkflowSignal.objects.exists()
    assert wf.reload(waiting).current_step == "confirmation"


def test_a_charge_event_without_its_amount_is_refused(client, wf, waiting):
    event = bank.succeeded_event(Charge.objects.get())
    del event["data"]["object"]["amount"]

    answer = deliver(client, event)

    assert (answer.status_code, answer.json()["code"]) == (400, "invalid_event")
    assert wf.reload(waiting).current_step == "confirmation"


def test_the_customer_may_not_say_the_bank_paid(wf, waiting, customer):
    with pytest.raises(NotAllowed):
        services.signal("order-fulfilment", "payment-confirmed",
                        {"charge": "ch_x", "amount_cents": 1, "currency": "EUR"},
                        instance=waiting, user=customer)

    assert wf.reload(waiting).current_step == "confirmation"


@pytest.mark.parametrize("workflow", ["fake-bank", "payment-reminder", "stock-report",
                                      "invoice-run"])
def test_a_customer_may_not_start_the_back_offices_workflows(wf, waiting, customer, workflow):
    # Above all the fake bank: it would confirm the customer's own charge.
    with pytest.raises(NotAllowed):
        services.create(workflow, state={"charge": Charge.objects.get().id}
                        if workflow == "fake-bank" else None, start=True, user=customer)

    assert Charge.objects.get().status == Charge.REQUIRES_ACTION


def test_a_bank_that_never_confirms_ends_the_order_unpaid_after_the_timeout(wf, waiting):
    wf.advance(TIMEOUT - 1)
    assert wf.reload(waiting).current_step == "confirmation"

    wf.advance(1)

    order = wf.reload(waiting)
    assert (order.status, order.history) == ("completed", ["payment", "confirmation",
                                                           "unpaid"])
    assert order.state["payment"] is None
    assert Charge.objects.get().status == Charge.CANCELLED
    assert [m.subject for m in mail.outbox] == ["Your order A-1001 was not paid"]
    wf.assert_events(order, ["signal-wait", "signal-timeout", "step-leave", "step-enter"],
                     contains=True)


def test_a_confirmation_after_the_timeout_blocks_the_order_and_its_rollback_refunds_it(
        wf, waiting, operator):
    charge = confirmed(Charge.objects.get())  # the bank, late: its webhook is not in yet

    wf.advance(TIMEOUT)

    order = wf.reload(waiting)
    assert (order.status, order.current_step) == ("blocked", "unpaid")
    assert order.errors[0] == (f"The bank confirmed {charge.id} after the order stopped "
                               "waiting for it: roll the order back to refund it")
    wf.rollback(order, user=operator)
    assert wf.reload(order).status == "idle"
    assert Refund.objects.get().charge_id == charge.id


def test_rolling_back_an_order_cancelled_while_it_waits_cancels_its_charge(wf, waiting,
                                                                          operator):
    wf.cancel(waiting)  # the customer changed their mind

    wf.rollback(waiting, user=operator)

    assert wf.reload(waiting).status == "idle"
    assert Charge.objects.get().status == Charge.CANCELLED
    assert not Refund.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_providers_webhook_reaches_the_shop_over_http(wf, live_server, settings):
    # The provider's own code: its bank confirms, it signs the event and POSTs it to the
    # shop's URL, and the live server's webhook view moves the order on.
    settings.SHOP_PAYMENTS = {"WEBHOOK_URL": live_server.url + "/hooks/payments/"}

    order = wf.create("order-fulfilment", state=order_state(), start=True)

    bank = operation_of("fake-bank", "send-webhook")
    assert bank["logs"][-1] == "The shop answered 200"
    assert wf.reload(order).status == "completed"
    assert wf.reload(order).state["payment"]["charge"] == Charge.objects.get().id


def operation_of(workflow: str, operation_id: str) -> dict:
    instance = WorkflowInstance.objects.get(workflow=workflow)
    return next(op for op in instance.operations if op["id"] == operation_id)
