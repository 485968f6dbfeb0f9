"""A refund assistant whose model is scripted (Pydantic AI's ``FunctionModel``): no network.

The model answers by what the conversation holds, as a real one would: it looks the order
up, proposes a refund (a tool that needs approval), and writes the customer an email
once the refund is done or denied. It counts its calls, and can fail a given call once
(an attempt that dies after some turns).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from django_workflows.ai import DjangoWorkflowsDurability

ORDERS = {"A-1": {"order": "A-1", "customer": "Ada", "total": 30}}


class RefundScript:
    """The model's side of the refund conversation; ``calls``: how often it was asked."""

    def __init__(self, *, fail_on_call: int | None = None) -> None:
        self.calls = 0
        self.fail_on_call = fail_on_call
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        self.seen.append(list(messages))
        if self.calls == self.fail_on_call:
            self.fail_on_call = None
            raise RuntimeError(f"the worker died in the model's call {self.calls}")
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returned = {p.tool_name: p for p in last.parts if isinstance(p, ToolReturnPart)}
        if any(isinstance(p, UserPromptPart) for p in last.parts):
            order = str(last.parts[-1].content).split()[-1]
            return ModelResponse(parts=[ToolCallPart("look_up_order", {"order": order})])
        if "look_up_order" in returned:
            found = returned["look_up_order"].content
            assert isinstance(found, dict)
            return ModelResponse(parts=[
                TextPart(f"The parcel of {found['order']} arrived broken: a full refund."),
                ToolCallPart("refund", {"order": found["order"], "amount": found["total"],
                                        "why": "arrived broken"})])
        if "refund" in returned:
            done = returned["refund"]
            if done.outcome == "denied":
                return ModelResponse(parts=[TextPart(f"Dear customer, no refund: {done.content}")])
            return ModelResponse(parts=[TextPart(f"Dear customer: {done.content}")])
        raise AssertionError(f"the script has no answer to {last!r}")


def refund_agent(script: RefundScript, ran: Callable[[str], Any],
                 **durability: Any) -> Agent[None, str]:
    """The assistant; its tools tell ``ran`` what they did ("looked up A-1",
    "refunded 20 of A-1"), the witness of each side effect."""
    agent = Agent(FunctionModel(script), name="refunds",
                  capabilities=[DjangoWorkflowsDurability(**durability)])

    @agent.tool_plain
    def look_up_order(order: str) -> dict[str, Any]:
        """Look an order up by its number."""
        ran(f"looked up {order}")
        return ORDERS[order]

    @agent.tool_plain(requires_approval=True)
    def refund(order: str, amount: int, why: str) -> str:
        """Refund an amount of an order to its customer.

        Args:
            order: the order's number
            amount: what to refund, in euros
            why: the reason, for the person who approves it
        """
        ran(f"refunded {amount} of {order}")
        return f"{amount} EUR of {order} refunded."

    return agent
