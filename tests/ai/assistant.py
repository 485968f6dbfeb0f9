"""The refund assistant registered as a workflow, for the tests with the database: its
tools write notes (the witness of each side effect), its approvals go to "refunds"."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group

from django_workflows import Operation, Step, Transition, Workflow, registry
from django_workflows.ai import Approvals, run_agent
from tests.ai.scripted import RefundScript, refund_agent
from tests.factories import UserFactory
from tests.testapp.models import Note

WORKFLOW = "refund-assistant"
ASKED = {"order": "A-1", "amount": 30, "why": "arrived broken"}  # the model's refund call


def register_assistant(script: RefundScript, **options: Any) -> None:
    """Register the assistant (``tests/ai/conftest.py`` unregisters it after each test)."""
    agent = refund_agent(script, lambda text: Note.objects.create(text=text))

    async def run(ctx):
        result = await run_agent(ctx, agent, f"Please refund {ctx.state['order']}",
                                 approvals=Approvals(candidates=["group:refunds"],
                                                     show=["order"]))
        return result.output

    registry.register(Workflow(id=WORKFLOW, initial={"order": ""}, steps=[
        Step("assist", advance="auto", operations=[
            Operation("assist", run=run, durable=True, **options)]),
        Step("done")], transitions=[Transition("assist", "done")]))


def refunder(username: str = "rita"):
    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name="refunds")[0])
    return user


def notes() -> list[str]:
    return list(Note.objects.order_by("pk").values_list("text", flat=True))
