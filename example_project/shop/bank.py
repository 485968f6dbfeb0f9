"""The fake payment provider's side of a charge: its bank confirms the charge, then the
provider tells the shop with a signed webhook, and sends it again until the shop answers 2xx.

In real life this runs on the provider's servers. The demo has none, so it runs here, as a
workflow of its own (``fake-bank``, one instance per pending charge, its reference
``bank:<charge id>``) on the same workers as the shop's: it survives a restart, and its
webhook is retried with backoff as a provider retries one. The wait for the bank is an
attempt with progress, so the admin shows the slow bank's minutes going by (and the load
test, ``bench/load.py``, has a long attempt to kill).

The shop's side is elsewhere: :mod:`.webhooks` turns the signed request into the signal
``payment-confirmed``, and the order waits for it (:mod:`.fulfilment`). The provider
(:mod:`.payments`) starts one of these for each pending charge, by the workflow's id.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from django_workflows import Operation, OperationContext, Step, Workflow
from django_workflows.webhooks import signature

from . import payments
from .back_office import staff_only
from .models import Charge
from .webhooks import payment_webhook

WEBHOOK_PATH = "/hooks/payments/"  # where the shop mounts its webhook (shop/urls.py)


class WebhookNotDelivered(payments.ProviderError):
    """The shop did not answer the webhook with a 2xx: the provider sends it again."""


# -- the webhook: the provider tells the shop ---------------------------------------------


def succeeded_event(charge: Charge) -> dict[str, Any]:
    """The event of a confirmed charge. Its id is the same each time it is sent again: the
    shop knows a retry by it."""
    return {
        "id": f"evt_{charge.id.removeprefix('ch_')}", "type": "charge.succeeded",
        "created": int(charge.settles_at.timestamp()),
        "data": {"object": {"id": charge.id, "amount": charge.amount_cents,
                            "currency": charge.currency, "reference": charge.reference,
                            "status": charge.status}},
    }


def send_event(event: dict[str, Any]) -> tuple[int, str]:
    """POST ``event``, signed, to the shop's webhook; its answer (status, body).

    Raises :class:`WebhookNotDelivered` unless the shop answered 2xx.
    """
    body = json.dumps(event).encode()
    headers = {"Content-Type": "application/json",
               "Webhook-Signature": signature(body, payments.webhook_secret())}
    url = payments.config()["WEBHOOK_URL"]
    status, answer = _post(url, body, headers) if url else _hand_over(body, headers)
    if not 200 <= status < 300:
        raise WebhookNotDelivered(f"The shop answered {status} to event {event['id']}: "
                                  f"{answer[:300]}")
    return status, answer


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except OSError as error:  # refused, reset, timed out: the shop is not there now
        raise WebhookNotDelivered(f"The shop's webhook at {url} did not answer: "
                                  f"{error}") from error


def _hand_over(body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """The request the shop's webhook view would get, handed to it in this process."""
    request = RequestFactory().post(WEBHOOK_PATH, body, content_type=headers["Content-Type"],
                                    headers={"Webhook-Signature": headers["Webhook-Signature"]})
    response = payment_webhook(request)
    body = response.content if isinstance(response, HttpResponse) else b""
    return response.status_code, body.decode(errors="replace")


def confirm_charge(ctx: OperationContext) -> dict[str, Any]:
    charge = payments.retrieve_charge(ctx.state["charge"])
    wait = max((charge.settles_at - charge.created_at).total_seconds(), 0.0)
    while charge.status == Charge.PENDING and \
            (left := (charge.settles_at - timezone.now()).total_seconds()) > 0:
        ctx.progress(round(wait - left, 1), wait, "The bank checks the payment")
        ctx.sleep(min(left, 0.5))  # raises when the attempt is told to stop
        charge = payments.retrieve_charge(charge.id)
    charge = payments.confirm(charge.id)  # unless the shop cancelled it meanwhile
    ctx.progress(wait, wait, "Confirmed" if charge.status == Charge.SUCCEEDED
                 else f"Not confirmed: the charge is {charge.status}")
    return {"status": charge.status}


def notify_shop(ctx: OperationContext) -> dict[str, Any]:
    charge = payments.retrieve_charge(ctx.state["charge"])
    if charge.status != Charge.SUCCEEDED:
        ctx.log(f"Charge {charge.id} is {charge.status}: nothing to tell the shop")
        return {"sent": None}
    event = succeeded_event(charge)
    ctx.log(f"Attempt {ctx.attempt}: sending {event['type']} ({event['id']}) to the shop")
    status, _ = send_event(event)  # raises unless 2xx: sent again, later
    ctx.log(f"The shop answered {status}")
    return {"sent": event["id"], "status": status}


def confirmation_timeout() -> float:
    """Seconds one attempt of the bank's confirmation may take: the slow bank's too."""
    return max(45.0, float(payments.config()["SLOW_LATENCY"]) + 15)


fake_bank = Workflow(
    id="fake-bank", title="The fake bank confirms a charge",
    permission=staff_only,
    initial={"charge": ""},
    state_schema={"type": "object", "required": ["charge"],
                  "properties": {"charge": {"type": "string", "maxLength": 40}}},
    steps=[
        Step("confirm", title="Confirm the charge and tell the shop", advance="auto",
             operations=[
                 Operation("confirm-charge", title="The bank confirms the charge",
                           run=confirm_charge, retries=3, retry_delay=2,
                           timeout=confirmation_timeout(), metadata={"unit": "s"}),
                 # A provider sends a webhook again until it is answered 2xx, for hours.
                 Operation("send-webhook", title="Send the signed webhook to the shop",
                           run=notify_shop, retries=30, retry_delay=1, backoff=2,
                           max_retry_delay=60, timeout=30),
             ]),
    ],
)
