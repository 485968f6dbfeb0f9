"""Workflows for the tests of signal delivery (who may send, fan-out, repeats, pause), and a
fixture that registers them for a test module: ``pytestmark = usefixtures("signal_workflows")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_workflows import Signal, Step, Transition, Workflow, registry

BOTS = "group:payment-bots"
PAID = {"type": "object", "required": ["amount"],
        "properties": {"amount": {"type": "integer", "minimum": 1}}}


def _tenant_rule(user: Any, instance: Any, action: str) -> bool:
    """A tenant rule: nobody sends a signal to an instance of the tenant "locked"."""
    return not (action == "signal" and instance is not None
                and instance.state.get("tenant") == "locked")


tenant_payment = Workflow(
    id="tenant-payment", initial={"tenant": "acme", "intent": "", "payment": None},
    permission=_tenant_rule,
    steps=[Step("cart"),
           Step("await-payment", wait=Signal("paid", correlate=lambda ctx: ctx.state["intent"],
                                              schema=PAID, into="payment", senders=[BOTS])),
           Step("ship")],
    transitions=[Transition("cart", "await-payment"), Transition("await-payment", "ship")],
)

# Two steps in a row wait for the same signal: one delivery moves one step.
two_pings = Workflow(
    id="two-pings", initial={"first": None, "second": None},
    steps=[Step("first", wait=Signal("ping", into="first", senders=[BOTS])),
           Step("second", wait=Signal("ping", into="second", senders=[BOTS])),
           Step("end", advance="auto")],
    transitions=[Transition("first", "second"), Transition("second", "end")],
)

# A signal, a step that waits for nothing, then the same signal again.
ping_later = Workflow(
    id="ping-later", initial={"first": None, "last": None},
    steps=[Step("first", wait=Signal("ping", into="first")),
           Step("middle"),
           Step("last", wait=Signal("ping", into="last")),
           Step("end")],
    transitions=[Transition("first", "middle"), Transition("middle", "last"),
                 Transition("last", "end")],
)


def _broadcast(fan_out: str) -> Workflow:
    return Workflow(
        id=f"broadcast-{fan_out}", initial={"topic": "", "news": None},
        steps=[Step("listen", wait=Signal("news", correlate=lambda ctx: ctx.state["topic"],
                                          into="news", fan_out=fan_out)),  # type: ignore[arg-type]
               Step("done")],
        transitions=[Transition("listen", "done")],
    )


broadcast_all, broadcast_first = _broadcast("all"), _broadcast("first")

# The signal's own schema lets any amount through; the workflow's state does not.
capped = Workflow(
    id="capped", initial={"payment": None},
    state_schema={"type": "object", "properties": {"payment": {
        "type": ["object", "null"],
        "properties": {"amount": {"type": "integer", "maximum": 100}}}}},
    steps=[Step("await", wait=Signal("paid", correlate=lambda ctx: "capped",
                                     schema=PAID, into="payment")),
           Step("done")],
    transitions=[Transition("await", "done")],
)

# The first step waits: create(start=True) enters it at once.
starts_waiting = Workflow(
    id="starts-waiting", initial={"intent": "", "payment": None},
    steps=[Step("await", wait=Signal("paid", correlate=lambda ctx: ctx.state["intent"],
                                     into="payment")),
           Step("done")],
    transitions=[Transition("await", "done")],
)

ALL = (tenant_payment, two_pings, ping_later, broadcast_all, broadcast_first, capped,
       starts_waiting)


@pytest.fixture
def signal_workflows() -> Iterator[None]:
    for workflow in ALL:
        registry.register(workflow, origin=__name__)
    try:
        yield
    finally:
        for workflow in ALL:
            registry.unregister(workflow.id)
