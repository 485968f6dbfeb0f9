"""The workflows the observability tests drive: an order paid on a worker, an instance
that waits for a signal and then a timer, and an approval (a task).

Registered by the tests' fixture in the test process (``conftest.py``), and found by
autodiscovery in the qcluster's processes, whose settings install this package as an
app (``settings.py``).
"""

from __future__ import annotations

import time
from datetime import timedelta

from django_workflows import Operation, Signal, Step, Task, Timer, Transition, Workflow


def reserve_stock(ctx):
    time.sleep(ctx.state.get("pause", 0))  # long enough, two workers share the orders
    return {"reserved": ctx.state.get("items", 1)}


def charge_card(ctx):
    if ctx.state.get("decline"):
        raise RuntimeError("The card was declined")
    return {"charged": ctx.state.get("amount", 0)}


order = Workflow(
    id="obs-order", title="Order", initial={"items": 1, "amount": 20, "decline": False},
    steps=[
        Step("reserve", advance="auto", operations=[Operation("reserve-stock", run=reserve_stock)]),
        Step("payment", advance="auto", operations=[Operation("charge", run=charge_card)]),
        Step("shipped"),
    ],
    transitions=[Transition("reserve", "payment"), Transition("payment", "shipped")],
)

delivery = Workflow(
    id="obs-delivery", title="Delivery",
    steps=[
        Step("dispatched", wait=Signal("delivered")),
        Step("cooling-off", wait=Timer(after=timedelta(days=14))),
        Step("closed"),
    ],
    transitions=[Transition("dispatched", "cooling-off"), Transition("cooling-off", "closed")],
)

approval = Workflow(
    id="obs-approval", title="Approval",
    steps=[
        Step("decide", task=Task({"type": "object", "properties": {"ok": {"type": "boolean"}}},
                                 candidates=["group:obs-managers"], due=3600)),
        Step("done"),
    ],
    transitions=[Transition("decide", "done")],
)

WORKFLOWS = (order, delivery, approval)
