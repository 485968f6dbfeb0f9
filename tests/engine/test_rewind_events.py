"""rewind's events come in the order things happen: what the steps it leaves stop (their
work, their task) first, then its own ``rewind`` event, then what the steps it returns to
do, as ``back``'s event comes after the step it leaves stopped."""

from __future__ import annotations

from django_workflows.engine import Operation, Rewind, Step, Task

from .helpers_navigation import chain, started, trail


def at_work(b: Step | None = None):
    """At the third step, whose operation a worker has claimed and is running."""
    definition = chain(Step("a"), b or Step("b"),
                       Step("slow", operations=[Operation("job", run=lambda c: 1)]))
    x, instance = started(definition, autorun=False)
    x.next(instance)
    x.next(instance)
    x.claim()
    return x, instance


def test_the_work_of_the_step_left_stops_before_the_rewind_event():
    x, instance = at_work()

    outcome = x.rewind(instance, "a")

    assert trail(outcome.events) == [("operation-cancelled", "slow"), ("rewind", "a")]


def test_rewind_orders_its_events_as_back_does():
    x, instance = at_work()
    y, twin = at_work()

    rewound = x.rewind(instance, "b")
    backed = y.back(twin)

    assert [e.type for e in rewound.events] == ["operation-cancelled", "rewind"]
    assert [e.type for e in backed.events] == ["operation-cancelled", "back"]


def test_the_task_of_the_step_left_is_cancelled_before_the_rewind_event():
    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    x, instance = started(chain(Step("a"), Step("b"), Step("approve", task=Task(form))))
    x.next(instance)
    x.next(instance)

    outcome = x.command(instance, Rewind("a"))

    assert trail(outcome.events) == [("task-cancel", "approve"), ("rewind", "a")]


def test_an_enter_hook_that_raises_while_rewinding_is_recorded_after_the_rewind_event():
    entered: list[str] = []

    def enter_once(ctx) -> None:
        if entered:
            raise RuntimeError("b cannot start again")
        entered.append("b")

    x, instance = at_work(Step("b", enter=enter_once))

    outcome = x.rewind(instance, "a")

    assert trail(outcome.events) == [("operation-cancelled", "slow"), ("rewind", "a"),
                                     ("error", "b")]
    assert (x.snapshot(instance).status, x.snapshot(instance).current_step) == ("failed", "b")
