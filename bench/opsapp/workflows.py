"""``bench-noop``: one auto step with one operation that does nothing, then a manual step;
``bench-deadline``: a task due in an hour (bench/deadlines.py moves its due time);
``bench-timer``: a step that waits an hour for a timer (bench/deadlines.py --kind timer,
bench/sweep_cost.py); ``bench-signal``: a plain step, then one that waits for the signal
``go`` correlated on ``state["key"]`` (bench/signals.py: ``next``, then the signal);
``bench-limited``: one auto step whose operation sleeps ``state["sleep"]`` seconds, at most 2
running per ``state["key"]`` (``Limit``), and ``bench-unlimited`` the same without the limit;
``bench-noop-limited``: ``bench-noop`` with a limit that never binds (``max`` 1,000,000 per
``state["key"]``). bench/limits.py (``bench/operations.py --limits``) measures these.
``bench-durable``: one auto step whose durable operation makes ``state["steps"]`` no-op
``ctx.step`` calls (bench/durable_code.py: four, and none as the baseline of a step's cost)."""

from __future__ import annotations

import time

from django_workflows import Limit, Operation, Signal, Step, Task, Timer, Transition, Workflow


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


def sleep(ctx):
    time.sleep(ctx.state.get("sleep", 0))


def limit_key(ctx):
    return ctx.state["key"]


def _sleeping(workflow_id: str, limit: Limit | None) -> Workflow:
    return Workflow(
        id=workflow_id,
        initial={"key": "", "sleep": 0},
        steps=[Step("work", advance="auto",
                    operations=[Operation("sleep", run=sleep, concurrency=limit)]),
               Step("done")],
        transitions=[Transition("work", "done")],
    )


limited = _sleeping("bench-limited", Limit(key=limit_key, max=2))
unlimited = _sleeping("bench-unlimited", None)


noop_limited = Workflow(
    id="bench-noop-limited",
    initial={"key": ""},
    steps=[Step("work", advance="auto", operations=[Operation(
        "noop", run=nothing, concurrency=Limit(key=limit_key, max=1_000_000))]),
           Step("done")],
    transitions=[Transition("work", "done")],
)


def no_result() -> None:
    return None


def durable_steps(ctx):
    for n in range(ctx.state["steps"]):
        ctx.step(f"step-{n}", no_result)


durable = Workflow(
    id="bench-durable",
    initial={"steps": 4},
    steps=[Step("work", advance="auto",
                operations=[Operation("steps", run=durable_steps, durable=True)]),
           Step("done")],
    transitions=[Transition("work", "done")],
)
