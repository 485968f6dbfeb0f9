"""Workflows that wait for the world outside: a payment confirmed by a signal, a reminder
timer (autodiscovered through ``workflows.py``)."""

from __future__ import annotations

from datetime import timedelta

from django_workflows import Signal, Step, Timer, Transition, Workflow

CONFIRMED = {"type": "object", "required": ["amount"], "additionalProperties": False,
             "properties": {"amount": {"type": "integer", "minimum": 1},
                            "charge": {"type": "string"}}}

payment = Workflow(
    id="payment", title="Payment", initial={"intent": "", "payment": None},
    steps=[
        Step("cart"),
        Step("await-payment", title="Wait for the bank",
             wait=Signal("payment-confirmed", correlate=lambda ctx: ctx.state["intent"],
                         schema=CONFIRMED, into="payment", timeout=timedelta(hours=1),
                         senders=["group:payment-bots"])),
        Step("ship"),
    ],
    transitions=[Transition("cart", "await-payment"), Transition("await-payment", "ship")],
)

reminder = Workflow(
    id="reminder", title="Reminder",
    steps=[Step("wait", wait=Timer(after=timedelta(days=3))), Step("remind")],
    transitions=[Transition("wait", "remind")],
)
