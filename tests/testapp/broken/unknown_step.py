"""A transition that names a step the workflow does not have (E001)."""

from __future__ import annotations

from django_workflows import Step, Transition, Workflow

unknown_step = Workflow(
    id="broken-unknown-step",
    steps=[Step("start")],
    transitions=[Transition("start", "nowhere")],
)
