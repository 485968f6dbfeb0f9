"""A reminder: a customer whose card was declined is reminded to give another one.

When the bank declines a card, the order blocks at its payment (:mod:`.fulfilment`) and
starts this small workflow: a timer (``Step(wait=Timer(after=...))``) of
``SHOP_TIMES["PAYMENT_REMINDER"]`` (three days; a minute in the demo), then an email to the
customer, unless the order was paid or cancelled meanwhile. The timer is a deadline row:
it survives restarts, and the workers' sweeper fires it. One reminder per order and card
(its reference), however often the declined attempt runs.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.core.mail import send_mail

from django_workflows import (
    Operation,
    OperationContext,
    Step,
    Timer,
    Transition,
    Workflow,
    services,
)
from django_workflows.exceptions import ReferenceTaken
from django_workflows.models import WorkflowInstance

from . import times
from .back_office import staff_only


def remind_later(order_id: str, payment_method: str) -> None:
    """Start the reminder of an order whose card ``payment_method`` was declined."""
    # A decline of this card seen before (a retried attempt): its reminder runs already.
    with contextlib.suppress(ReferenceTaken):
        services.create("payment-reminder", start=True,
                        state={"order": order_id, "payment_method": payment_method},
                        reference=f"remind:{order_id}:{payment_method}")


def still_waits_for_a_card(order: WorkflowInstance | None, payment_method: str) -> bool:
    return order is not None and (order.status, order.current_step) == ("blocked", "payment") \
        and order.state.get("payment_method") == payment_method


def send_reminder(ctx: OperationContext) -> dict[str, Any]:
    order = WorkflowInstance.objects.filter(pk=ctx.state["order"]).first()
    if not still_waits_for_a_card(order, ctx.state["payment_method"]):
        ctx.log("The order no longer waits for another card: no reminder")
        return {"reminded": None}
    assert order is not None
    customer, number = order.state["customer"], order.state["order_number"]
    send_mail(f"Your order {number} waits for another card",
              f"Hello {customer['name']},\n\nyour bank declined the card you gave for your "
              f"order {number}. Give another payment method to have it shipped.\n",
              "shop@example.com", [customer["email"]])
    ctx.log(f"Reminded {customer['email']}")
    return {"reminded": customer["email"]}


payment_reminder = Workflow(
    id="payment-reminder", title="Remind a customer to pay",
    permission=staff_only,
    initial={"order": "", "payment_method": ""},
    state_schema={"type": "object", "required": ["order", "payment_method"],
                  "properties": {"order": {"type": "string", "maxLength": 36},
                                 "payment_method": {"type": "string", "maxLength": 60}}},
    steps=[
        Step("wait", title="Give the customer time",
             wait=Timer(after=times.seconds("PAYMENT_REMINDER"))),
        Step("remind", title="Remind the customer", advance="auto",
             operations=[Operation("email-reminder", title="Email the customer",
                                   run=send_reminder, retries=3, retry_delay=30, backoff=2)]),
    ],
    transitions=[Transition("wait", "remind")],
)
