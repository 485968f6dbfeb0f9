"""Order fulfilment: a back-office process that runs on its own.

payment -> confirmation -> preparation (stock || courier) -> shipment -> completion
                        `-> unpaid (the bank never confirmed)

* ``payment`` charges the card at the (fake) payment provider
  (:mod:`example_project.shop.payments`): retried with exponential backoff when
  the provider is unavailable, bounded by a ten-minute step timeout, refunded
  by its ``rollback``. The idempotency key names the order and the card, so a
  retry after a lost answer finds the first charge instead of charging twice.
  The charge is pending: the shop records its id (a :class:`Payment` row).
  The provider allows each merchant at most 5 charge requests at once and refuses a
  sixth, so the charge is declared with ``concurrency=Limit(key=<the order's merchant>,
  max=5)``: a sixth order of a merchant waits for a slot (its attempt ``waiting``,
  holding no worker) and is charged when one of the five ends. The merchant is
  ``state["merchant"]`` (``"shop"`` when the order names none).
  A declined card blocks the order until someone gives another card, and the
  customer is reminded of it later (:mod:`.reminders`, a timer).
* ``confirmation`` waits for the bank, without polling: for the signal
  ``payment-confirmed``, which the provider's signed webhook sends
  (:mod:`.webhooks`), addressed by the charge's id (its correlation). Its
  payload is checked against ``PAYMENT_CONFIRMED`` and kept in the state under
  ``payment``. A webhook that comes before the order waits is kept, and taken
  the moment it does. If none comes within ``SHOP_TIMES["PAYMENT_CONFIRMATION"]``
  (``on_timeout="continue"``: ``payment`` is then None), the order goes to
  ``unpaid``, which cancels the charge at the provider and tells the customer.
* ``preparation`` reserves stock and books a courier in parallel; each branch
  has a compensation that undoes it when the order is rolled back.
* ``shipment`` prints a label per parcel (progress and log lines show it).
* ``completion`` emails the customer.

What a customer sends is an order, not a price: the total comes from the
shop's catalogue when the card is charged. A customer places, follows and may
cancel their order (``order_permission``); the payment, the wait for the bank,
the preparation and the shipment cannot be skipped by anyone, and only the
signal (or its timeout) writes ``payment``.
"""

from __future__ import annotations

import math
from typing import Any

from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F

from django_workflows import (
    Branch,
    HookContext,
    Limit,
    Operation,
    OperationContext,
    Signal,
    Step,
    Transition,
    Workflow,
)

from . import payments, reminders, times
from .models import Charge, CourierBooking, Payment, Shipment, StockItem, StockReservation

# Which courier delivers to which country; others cannot be shipped to.
COURIERS = {"DE": "Parcelway", "FR": "Parcelway", "NL": "Parcelway", "GB": "Royal Post",
            "US": "Eagle Express"}
ITEMS_PER_PARCEL = 3

ORDER_SCHEMA = {
    "type": "object",
    "required": ["order_number", "customer", "items", "payment_method", "currency", "address"],
    "properties": {
        "order_number": {"type": "string", "maxLength": 40},
        "customer": {
            "type": "object", "required": ["name", "email"],
            "properties": {"name": {"type": "string", "maxLength": 100},
                           "email": {"type": "string", "maxLength": 254}},
        },
        "items": {  # what is ordered; the prices are the shop's (its catalogue), not the client's
            "type": "array", "minItems": 1, "maxItems": 50,
            "items": {
                "type": "object", "required": ["sku", "quantity"], "additionalProperties": False,
                "properties": {"sku": {"type": "string", "maxLength": 40},
                               "quantity": {"type": "integer", "minimum": 1, "maximum": 1000}},
            },
        },
        "payment_method": {"type": "string", "maxLength": 60},
        # Whom the order is charged for (a marketplace's seller): "shop" when not given.
        "merchant": {"type": "string", "minLength": 1, "maxLength": 40},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "address": {
            "type": "object", "required": ["country"],
            "properties": {"country": {"type": "string", "pattern": "^[A-Z]{2}$"}},
        },
    },
}


class UnknownArticle(Exception):
    pass


def order_total(state: Any) -> int:
    """The order's total at the catalogue's prices, read on the server when it is charged."""
    skus = {line["sku"] for line in state["items"]}
    prices = dict(StockItem.objects.filter(sku__in=skus).values_list("sku", "price_cents"))
    unknown = sorted(skus - set(prices))
    if unknown:
        raise UnknownArticle(f"The shop sells no {', '.join(unknown)}")
    return sum(line["quantity"] * prices[line["sku"]] for line in state["items"])


def without_client_prices(persisted: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept the prices the client sent; version 2 reads the catalogue's."""
    state = persisted["state"]
    state["items"] = [{"sku": line["sku"], "quantity": line["quantity"]}
                      for line in state.get("items", [])]
    return persisted


def money(cents: int, currency: str) -> str:
    return f"{cents / 100:.2f} {currency}"


# -- payment ---------------------------------------------------------------------------


DEFAULT_MERCHANT = "shop"


def merchant_of(state: Any) -> str:
    """Whom the order is charged for."""
    return str(state.get("merchant") or DEFAULT_MERCHANT)


def merchant_charges(ctx: HookContext) -> str:
    """The key of the charge's ``Limit``: the provider counts concurrent charges per
    merchant, so the orders of one merchant share its five slots (``merchant-7``)."""
    return f"merchant-{merchant_of(ctx.state)}"


def payment_key(instance_id: str, payment_method: str) -> str:
    """One charge per order and card: every attempt (and a repeated one) sends this key."""
    return f"order-{instance_id}-{payment_method}"


def charge_payment(ctx: OperationContext) -> dict[str, Any]:
    state = ctx.state
    try:
        amount = order_total(state)
    except UnknownArticle as error:
        ctx.block(f"{error}: correct the order to go on")
    method = state["payment_method"]
    ctx.log(f"Attempt {ctx.attempt}: charging {money(amount, state['currency'])} to {method}")
    try:
        charge = payments.create_charge(
            amount_cents=amount, currency=state["currency"], payment_method=method,
            reference=ctx.instance_id, idempotency_key=payment_key(ctx.instance_id, method),
            merchant=merchant_of(state))
    except payments.CardDeclined as error:
        # Retrying the same card will not help: wait until someone gives another one.
        reminders.remind_later(ctx.instance_id, method)
        ctx.block(f"{error}: give another payment method to go on")
    Payment.objects.update_or_create(order=ctx.instance_id, defaults={"charge": charge.id})
    ctx.log(f"Charge {charge.id} made: the order waits for the bank to confirm it")
    return {"charge": charge.id, "amount_cents": amount, "currency": state["currency"]}


def charge_to_confirm(ctx: HookContext) -> str | None:
    """The provider's id of the order's charge: the provider's webhook names it."""
    payment = Payment.objects.filter(order=ctx.instance_id).first()
    return payment.charge if payment else None


# The payload of the signal payment-confirmed (webhooks.py makes it of the provider's event).
PAYMENT_CONFIRMED = {
    "type": "object", "required": ["charge", "amount_cents", "currency"],
    "additionalProperties": False,
    "properties": {"charge": {"type": "string", "maxLength": 40},
                   "amount_cents": {"type": "integer", "minimum": 1},
                   "currency": {"enum": ["EUR", "USD", "GBP"]}},
}


def paid(ctx: HookContext) -> bool:
    return ctx.state.get("payment") is not None


def refund_payment(result: dict[str, Any] | None, ctx: OperationContext) -> None:
    # Without a result (the last attempt failed, was cancelled, or its worker died) a
    # charge may still have been made, its answer lost: ask the provider. A charge the
    # bank is confirming cannot be refunded yet: wait for it first. One the bank will
    # never confirm (it waits for the customer) is cancelled: no money moved.
    if result:
        charge_ids = [result["charge"]]
    else:
        charge_ids = [c.id for c in payments.charges_for(ctx.instance_id)
                      if c.status != Charge.DECLINED]
    for charge_id in charge_ids:
        charge = payments.retrieve_charge(charge_id)
        if charge.status == Charge.REQUIRES_ACTION:
            charge = payments.cancel_charge(charge_id)
            ctx.log(f"Cancelled {charge_id}, which the bank had not confirmed")
        if charge.status == Charge.PENDING:
            ctx.log(f"Waiting for the bank to confirm {charge_id} before refunding it")
        # A rollback has no timeout: its wait is bounded here, past the slowest bank.
        patience = float(payments.config()["SLOW_LATENCY"]) + 30
        waited = 0.0
        while charge.status == Charge.PENDING:
            if waited >= patience:
                raise payments.ProviderError(
                    f"The bank has not confirmed {charge_id} after {patience:.0f}s: "
                    "roll the order back again later to refund it")
            ctx.sleep(0.5)
            waited += 0.5
            charge = payments.retrieve_charge(charge_id)
        if charge.status != Charge.SUCCEEDED:
            continue
        refund = payments.refund(charge_id, idempotency_key=f"refund-{charge_id}")
        ctx.log(f"Refunded {charge_id} ({refund.id})")


charge = Operation(
    "charge-card", title="Charge the card",
    description="Charge the order's total at the payment provider; the bank confirms it "
                "later, by webhook. At most 5 charges of a merchant run at once (the "
                "provider refuses a sixth): the next order waits for a slot.",
    metadata={"provider": "fake"},
    run=charge_payment, rollback=refund_payment,
    retries=10, retry_delay=2, backoff=2, max_retry_delay=120,
    # One attempt: a request to the provider. A rollback may wait for the slow bank.
    timeout=max(45.0, float(payments.config()["SLOW_LATENCY"]) + 15),
    # The provider refuses a merchant's sixth concurrent charge: a sixth order waits.
    concurrency=Limit(key=merchant_charges, max=payments.CONCURRENT_CHARGES),
)


# -- an order the bank never confirmed ------------------------------------------------------


def cancel_unconfirmed(ctx: OperationContext) -> dict[str, Any]:
    """Cancel the charge the bank did not confirm in time, and tell the customer."""
    payment = Payment.objects.filter(order=ctx.instance_id).first()
    status = None
    if payment is not None:
        status = payments.cancel_charge(payment.charge).status
        if status == Charge.SUCCEEDED:
            # Its confirmation came after the order stopped waiting: a person decides.
            ctx.block(f"The bank confirmed {payment.charge} after the order stopped "
                      "waiting for it: roll the order back to refund it")
        ctx.log(f"Charge {payment.charge} is {status}: nothing was taken")
    customer = ctx.state["customer"]
    send_mail(f"Your order {ctx.state['order_number']} was not paid",
              f"Hello {customer['name']},\n\nyour bank did not confirm the payment for your "
              "order, so we cancelled it. Nothing was charged.\n",
              "shop@example.com", [customer["email"]])
    ctx.log(f"Emailed {customer['email']}")
    return {"charge": payment.charge if payment else None, "status": status}


# -- preparation: two branches in parallel ------------------------------------------------


class OutOfStock(Exception):
    pass


class NoCourier(Exception):
    pass


def reserve_stock(ctx: HookContext) -> None:
    with transaction.atomic():  # all lines or none
        for line in ctx.state["items"]:
            item = StockItem.objects.select_for_update().filter(pk=line["sku"]).first()
            if item is None:
                raise OutOfStock(f'Unknown article "{line["sku"]}"')
            if StockReservation.objects.filter(order=ctx.instance_id, item=item).exists():
                continue  # reserved by an earlier run of this branch
            if item.available < line["quantity"]:
                raise OutOfStock(f"Only {item.available} of {item.sku} left; "
                                 f"{line['quantity']} ordered")
            StockReservation.objects.create(order=ctx.instance_id, item=item,
                                            quantity=line["quantity"])
            StockItem.objects.filter(pk=item.pk).update(reserved=F("reserved") +
                                                         line["quantity"])


def release_stock(ctx: HookContext) -> None:
    with transaction.atomic():
        for reservation in StockReservation.objects.select_for_update().filter(
                order=ctx.instance_id):
            StockItem.objects.filter(pk=reservation.item_id).update(
                reserved=F("reserved") - reservation.quantity)
            reservation.delete()


def book_courier(ctx: HookContext) -> None:
    country = ctx.state["address"]["country"]
    courier = COURIERS.get(country)
    if courier is None:
        raise NoCourier(f"No courier delivers to {country}")
    CourierBooking.objects.update_or_create(
        order=ctx.instance_id,
        defaults={"courier": courier, "country": country, "status": CourierBooking.BOOKED})


def cancel_courier(ctx: HookContext) -> None:
    CourierBooking.objects.filter(order=ctx.instance_id).update(status=CourierBooking.CANCELLED)


# -- shipment and completion ---------------------------------------------------------------


def ship_parcels(ctx: OperationContext) -> dict[str, Any]:
    quantity = sum(line["quantity"] for line in ctx.state["items"])
    parcels = max(1, math.ceil(quantity / ITEMS_PER_PARCEL))
    for number in range(1, parcels + 1):
        ctx.check_cancelled()
        ctx.log(f"Label printed for parcel {number} of {parcels}")
        ctx.progress(number, parcels, "Printing labels")
    tracking = f"PW{ctx.instance_id.replace('-', '')[:10].upper()}"
    Shipment.objects.update_or_create(
        order=ctx.instance_id,
        defaults={"tracking_number": tracking, "parcels": parcels, "status": Shipment.SHIPPED})
    courier = COURIERS[ctx.state["address"]["country"]]
    ctx.log(f"Handed to {courier}, tracking number {tracking}")
    return {"tracking_number": tracking, "parcels": parcels}


def void_shipment(result: dict[str, Any] | None, ctx: OperationContext) -> None:
    Shipment.objects.filter(order=ctx.instance_id).update(status=Shipment.VOIDED)


def email_customer(ctx: OperationContext) -> dict[str, Any]:
    customer = ctx.state["customer"]
    send_mail(f"Your order {ctx.state['order_number']} is on its way",
              f"Hello {customer['name']},\n\nyour order has been handed to the courier.\n",
              "shop@example.com", [customer["email"]])
    ctx.log(f"Emailed {customer['email']}")
    return {"emailed": customer["email"]}


def order_permission(user: Any, instance: Any, action: str) -> bool:
    """A customer places, follows and may cancel an order; the back office does the rest.

    A declined card blocks the payment: then the customer may give another one.
    """
    if getattr(user, "is_staff", False) or action in ("list", "create", "view", "start",
                                                      "cancel"):
        return True
    return action == "update_state" and instance is not None and \
        (instance.status, instance.current_step) == ("blocked", "payment")


fulfilment = Workflow(
    id="order-fulfilment", version=2, title="Order fulfilment",
    initial={"order_number": "", "customer": {"name": "", "email": ""}, "items": [],
             "payment_method": "pm_card_ok", "currency": "EUR", "address": {"country": ""},
             "merchant": DEFAULT_MERCHANT},
    state_schema=ORDER_SCHEMA,
    migrate=without_client_prices,
    permission=order_permission,
    reopen_completed=False,  # a shipped order is not reopened by one click on Back
    steps=[
        # Nobody ships an unpaid order: the payment cannot be skipped, not even by staff.
        Step("payment", title="Take payment", advance="auto", timeout=600,
             operations=[charge], skippable=False),
        # The bank answers through the provider's webhook, by the charge's id; only the
        # signal (or its timeout: None) writes "payment", and the transitions read it.
        Step("confirmation", title="Wait for the bank", skippable=False,
             wait=Signal("payment-confirmed", correlate=charge_to_confirm,
                         schema=PAYMENT_CONFIRMED, into="payment",
                         timeout=times.seconds("PAYMENT_CONFIRMATION"),
                         on_timeout="continue")),
        Step("preparation", title="Reserve stock and book a courier", advance="auto",
             timeout=120, skippable=False,
             parallel=[Branch("reserve-stock", run=reserve_stock, compensate=release_stock),
                       Branch("book-courier", run=book_courier, compensate=cancel_courier)]),
        Step("shipment", title="Ship", advance="auto", skippable=False,
             operations=[Operation("ship-parcels", title="Print labels and hand over",
                                   run=ship_parcels, rollback=void_shipment, retries=2,
                                   retry_delay=10, timeout=30)]),
        Step("completion", title="Tell the customer", advance="auto",
             operations=[Operation("email-customer", title="Email the customer",
                                   run=email_customer, retries=3, retry_delay=30, backoff=2)]),
        Step("unpaid", title="Cancel the unconfirmed payment", advance="auto",
             operations=[Operation("cancel-charge", title="Cancel the charge, tell the customer",
                                   run=cancel_unconfirmed, retries=3, retry_delay=30,
                                   backoff=2)]),
    ],
    transitions=[
        Transition("payment", "confirmation"),
        Transition("confirmation", "preparation", label="paid", when=paid),
        Transition("confirmation", "unpaid", label="not confirmed in time"),
        Transition("preparation", "shipment"),
        Transition("shipment", "completion"),
    ],
)
