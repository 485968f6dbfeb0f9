"""Workflows whose tasks show what is decided (``Task(show=...)``), and a nested one whose
task belongs to its root: shared by the admin's and the API's tests of the task pages."""

from __future__ import annotations

import pytest

from django_workflows import Step, Task, Transition, Workflow, registry, services

DECISION = {"type": "object", "required": ["decision"], "additionalProperties": False,
            "properties": {"decision": {"enum": ["approved", "rejected"], "title": "Decision"}}}

CLAIM = {"amount": 120.5, "currency": "EUR", "description": "Train to Lyon <script>x()</script>",
         "receipt": "https://files.example.com/receipts/1.pdf"}

claim = Workflow(
    id="shown-claim", version=1, title="A claim that shows itself",
    initial=CLAIM,
    state_schema={"type": "object", "properties": {"amount": {"title": "Amount spent"}}},
    steps=[Step("claim"),
           Step("approval", title="Manager's decision",
                task=Task(DECISION, candidates=["group:managers"], title="Decide on a claim",
                          show=["amount", "currency", "description", "receipt", "iban"]))],
    transitions=[Transition("claim", "approval")],
)


def _show_or_fail(ctx):
    if ctx.state.get("fail"):
        raise RuntimeError("the show broke")
    return [("Who", ctx.state["who"])]


hooked = Workflow(
    id="shown-hook", version=1, title="A task shown by a hook",
    initial={"who": "alice", "fail": False},
    steps=[Step("review", task=Task(DECISION, candidates=["group:managers"],
                                    show=_show_or_fail))],
)

identity = Workflow(
    id="shown-identity", version=1, title="An identity check", nested_only=True,
    initial={"document_type": "passport", "document_number": "X1234567"},
    steps=[Step("review", title="Review a document",
                task=Task(DECISION, candidates=["group:managers"], title="Review a document",
                          show=["document_type", "document_number"]))],
)

onboarding = Workflow(
    id="shown-onboarding", version=1, title="An onboarding",
    steps=[Step("identity", nested=identity), Step("done")],
    transitions=[Transition("identity", "done")],
)

ALL = (claim, hooked, identity, onboarding)


@pytest.fixture
def shown_workflows():
    """These workflows, registered for the test only."""
    added = [w for w in ALL if registry.find(w.id) is None]
    for workflow in added:
        registry.register(workflow, origin=__name__)
    yield
    for workflow in reversed(added):
        registry.unregister(workflow.id)


def claim_at_approval(owner, reference: str | None = "E-2026-0001", **state):
    instance = services.create("shown-claim", owner=owner, start=True, reference=reference,
                               state={**CLAIM, **state})
    return services.next(instance, user=owner)


def onboarding_of(owner, reference: str | None = None):
    """An onboarding whose nested identity check waits for its review task."""
    return services.create("shown-onboarding", owner=owner, start=True, reference=reference)
