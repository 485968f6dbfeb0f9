"""``bench-noop``: one auto step with one operation that does nothing, then a manual step;
``bench-deadline``: a task due in an hour (bench/deadlines.py moves its due time)."""

from __future__ import annotations

from django_workflows import Operation, Step, Task, Transition, Workflow


def nothing(ctx):
    return None


noop = Workflow(
    id="bench-noop",
    steps=[Step("work", advance="auto", operations=[Operation("noop", run=nothing)]),
           Step("done")],
    transitions=[Transition("work", "done")],
)


deadline = Workflow(
    id="bench-deadline",
    steps=[Step("decide", task=Task({"type": "object"}, candidates=["user:nobody"], due=3600)),
           Step("done")],
    transitions=[Transition("decide", "done")],
)
