"""``bench-noop``: one auto step with one operation that does nothing, then a manual step."""

from __future__ import annotations

from django_workflows import Operation, Step, Transition, Workflow


def nothing(ctx):
    return None


noop = Workflow(
    id="bench-noop",
    steps=[Step("work", advance="auto", operations=[Operation("noop", run=nothing)]),
           Step("done")],
    transitions=[Transition("work", "done")],
)
