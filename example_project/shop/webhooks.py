"""The shop's payment webhook, ``/hooks/payments/``: the provider's signed events as signals.

The provider (:mod:`.payments`) POSTs ``charge.succeeded`` when the bank confirmed a
charge, signed with the secret both share (``SHOP_PAYMENTS["WEBHOOK_SECRET"]``). The view
(``django_workflows.webhooks``) checks the signature and the event's shape, and sends the
signal ``payment-confirmed`` to the order waiting for that charge (its correlation, the
charge's id), with the provider's event id as the message id: the provider's retries are
answered ``repeated`` and change nothing. A forged or stale signature is answered 403 and
changes nothing. docs/webhooks.md tells the whole story.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from django_workflows.webhooks import Delivery, webhook

from . import payments
from .invoices import CHARGE_REFERENCE as INVOICE_CHARGES

# What the events this webhook reads must hold; any other body is answered 400.
PAYMENT_EVENT = {
    "type": "object", "required": ["id", "type"],
    "properties": {"id": {"type": "string", "maxLength": 100},
                   "type": {"type": "string", "maxLength": 100}},
    "if": {"properties": {"type": {"const": "charge.succeeded"}}},
    "then": {"required": ["data"], "properties": {"data": {
        "type": "object", "required": ["object"], "properties": {"object": {
            "type": "object", "required": ["id", "amount", "currency"],
            "properties": {"id": {"type": "string", "maxLength": 40},
                           "amount": {"type": "integer", "minimum": 1},
                           "currency": {"type": "string", "maxLength": 3}}}}}}},
}


def payment_deliveries(request: HttpRequest, event: dict[str, Any]) -> list[Delivery]:
    """A provider's event, as the signals it sends."""
    if event["type"] != "charge.succeeded":
        return []  # an event the shop does not need: answered 200, the provider is done
    charge = event["data"]["object"]
    if str(charge.get("reference") or "").startswith(INVOICE_CHARGES):
        return []  # no order waits for it: an invoice run counts it once it was made
    return [Delivery("order-fulfilment", "payment-confirmed",
                     {"charge": charge["id"], "amount_cents": charge["amount"],
                      "currency": charge["currency"]},
                     correlation=charge["id"])]


payment_webhook = webhook("payments", deliveries=payment_deliveries,
                          event_schema=PAYMENT_EVENT, secret=payments.webhook_secret)
