"""Signed HTTP requests to the test project's webhooks, served by a live server."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from django_workflows import services
from django_workflows.models import WorkflowInstance, WorkflowSignal
from django_workflows.webhooks import signature

SECRET = "whsec_test"


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


class Provider:
    """What a payment provider does: sign a body and POST it."""

    def __init__(self, base_url: str) -> None:
        self.address = urlsplit(base_url)

    def send(self, path: str, body: bytes | str | Any, *, secret: str = SECRET,
             timestamp: int | None = None, header: str = "Webhook-Signature",
             signed: str | None = None, method: str = "POST",
             headers: dict[str, str] | None = None) -> Answer:
        """``body`` as it is if bytes or text, else as JSON; signed with ``secret`` now
        (or ``signed``: that header's value as it is; "" sends no header)."""
        if not isinstance(body, bytes | str):
            body = json.dumps(body)
        raw = body.encode() if isinstance(body, str) else body
        value = signature(raw, secret, timestamp=timestamp) if signed is None else signed
        sent = {"Content-Type": "application/json", **({header: value} if value else {}),
                **(headers or {})}
        connection = http.client.HTTPConnection(self.address.hostname, self.address.port,
                                                timeout=30)
        try:
            connection.request(method, path, body=raw, headers=sent)
            response = connection.getresponse()
            content = response.read()
        finally:
            connection.close()
        is_json = response.getheader("Content-Type", "").startswith("application/json")
        return Answer(response.status, json.loads(content) if is_json else content,
                      dict(response.getheaders()))


@pytest.fixture
def provider(live_server, settings) -> Provider:
    settings.PAYMENTS_WEBHOOK_SECRET = SECRET
    return Provider(live_server.url)


def succeeded(intent: str = "pi_1", *, event: str = "evt_1", amount: int = 12) -> dict:
    """A provider's event: the payment intent ``intent`` succeeded."""
    return {"id": event, "type": "payment_intent.succeeded",
            "data": {"object": {"id": intent, "amount": amount, "latest_charge": "ch_1"}}}


def waiting_order(intent: str = "pi_1", **options) -> WorkflowInstance:
    """A payment instance that waits for "payment-confirmed" with correlation ``intent``."""
    instance = services.create("payment", state={"intent": intent, "payment": None},
                               start=True, **options)
    return services.next(instance)


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def footprint(instance: WorkflowInstance) -> tuple:
    """What a refused request must leave as it was."""
    row = reload(instance)
    return (row.revision, row.current_step, row.state, row.events.count(),
            list(WorkflowSignal.objects.values_list("pk", "status")))
