"""The test project's payment provider: its events, and the signals they become."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from django_workflows.webhooks import Delivery, RejectEvent, WebhookView

# What a "payment_intent.succeeded" event must hold for payment_deliveries to read it.
EVENT = {
    "type": "object", "required": ["id", "type"],
    "properties": {
        "id": {"type": "string"}, "type": {"type": "string"},
        "data": {"type": "object", "required": ["object"], "properties": {"object": {
            "type": "object", "required": ["id", "amount"],
            "properties": {"id": {"type": "string"}, "amount": {"type": "integer"},
                           "latest_charge": {"type": "string"}}}}},
    },
    "if": {"properties": {"type": {"const": "payment_intent.succeeded"}}},
    "then": {"required": ["data"]},
}


def payment_deliveries(request: HttpRequest, event: dict[str, Any]) -> list[Delivery]:
    """The event schema above was met: the fields it requires are there."""
    if event["type"] != "payment_intent.succeeded":
        return []  # answered 200 with no deliveries: the provider stops sending it
    intent = event["data"]["object"]
    payload = {"amount": intent["amount"]}
    if "latest_charge" in intent:
        payload["charge"] = intent["latest_charge"]
    return [Delivery("payment", "payment-confirmed", payload, correlation=intent["id"])]


def order_deliveries(request: HttpRequest, event: dict[str, Any]) -> list[Delivery]:
    """No event schema: the function reads what it needs and rejects what it cannot."""
    order = event.get("order")
    if not isinstance(order, dict) or not isinstance(order.get("reference"), str):
        raise RejectEvent("An order event names its order's reference in order.reference")
    return [Delivery("payment", "payment-confirmed", order.get("paid"),
                     reference=order["reference"])]


def broken_deliveries(request: HttpRequest, event: dict[str, Any]) -> list[Delivery]:
    raise RuntimeError("a bug in the project's own function")


class SplitPayments(WebhookView):
    """A subclass: one delivery per intent the event lists, each with its own message id."""

    name = "split"
    secret = "split-secret"

    def get_deliveries(self, request: HttpRequest, event: dict[str, Any]) -> list[Delivery]:
        intents = event.get("intents")
        if not isinstance(intents, list):
            raise RejectEvent("A split event lists its intents")
        return [Delivery("payment", "payment-confirmed", {"amount": 5}, correlation=intent,
                         message_id=f"{event['id']}:{intent}") for intent in intents]
