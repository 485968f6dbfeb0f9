"""docs/agents.md's example runs as the page says, its model scripted (no network): the
agent looks the order up, a person of "refunds" lowers the amount, the refund is made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic_ai.models.function import FunctionModel

from django_workflows import registry, services
from django_workflows.models import WorkflowInstance, WorkflowTask
from tests.ai.assistant import refunder
from tests.ai.scripted import RefundScript

pytestmark = pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def example(model: object) -> dict[str, object]:
    """The page's first Python block run, with ``model`` for its network model."""
    block = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert block is not None and '"openai:gpt-5.2"' in block.group(1)
    namespace: dict[str, object] = {"SCRIPTED": model}
    exec(block.group(1).replace('"openai:gpt-5.2"', "SCRIPTED"), namespace)
    return namespace


def test_the_page_s_refund_assistant_refunds_what_the_person_approved():
    script = RefundScript()
    page = example(FunctionModel(script))
    registry.register(page["refund_assistant"])  # type: ignore[arg-type]
    try:
        instance = services.create("refund-assistant",
                                   state={"message": "Please refund A-1"}, start=True)
        task = WorkflowTask.objects.get(instance=instance, status="open")
        assert task.asked["form"]["properties"]["amount"]["default"] == 30
        assert task.asked["show"] == ["message"]

        services.complete(instance, input={"order": "A-1", "amount": 25, "why": "broken",
                                           "approve": True}, user=refunder())

        instance = WorkflowInstance.objects.get(pk=instance.pk)
        assert page["REFUNDS"] == [("A-1", 25)]
        assert instance.snap.operation("assist").result == "Dear customer: 25 EUR of A-1 refunded."
    finally:
        registry.unregister("refund-assistant")
