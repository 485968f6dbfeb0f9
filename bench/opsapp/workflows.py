"""``bench-noop``: one auto step with one operation that does nothing, then a manual step;
``bench-deadline``: a task due in an hour (bench/deadlines.py moves its due time);
``bench-timer``: a step that waits an hour for a timer (bench/deadlines.py --kind timer,
bench/sweep_cost.py); ``bench-signal``: a plain step, then one that waits for the signal
``go`` correlated on ``state["key"]`` (bench/signals.py: ``next``, then the signal)."""

from __future__ import annotations

from django_workflows import Operation, Signal, Step, Task, Timer, Transition, Workflow


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


timer = Workflow(
    id="bench-timer",
    steps=[Step("wait", wait=Timer(after=3600)), Step("done")],
    transitions=[Transition("wait", "done")],
)


def key(ctx):
    return ctx.state.get("key")


signalled = Workflow(
    id="bench-signal",
    initial={"key": None},
    steps=[Step("ready"), Step("wait", wait=Signal("go", correlate=key, into="go")),
           Step("done")],
    transitions=[Transition("ready", "wait"), Transition("wait", "done")],
)
