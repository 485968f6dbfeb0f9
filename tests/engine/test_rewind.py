"""rewind(step): back to an earlier step of the history in one command, as that many backs."""

from __future__ import annotations

from django_workflows.engine import Operation, Rewind, Step, applies, verdict
from django_workflows.engine.rules.recovery import earlier_steps

from .helpers_navigation import Calls, chain, kinds, started, trail, wizard


def at_fourth_step(**workflow) -> tuple:
    x, instance = started(wizard("account", "plan", "address", "confirm", **workflow))
    for _ in range(3):
        x.next(instance)
    return x, instance


def test_rewind_returns_to_the_step_named_as_that_many_backs_would():
    x, instance = at_fourth_step()
    y, twin = at_fourth_step()

    x.rewind(instance, "plan")
    y.back(twin)
    y.back(twin)

    rewound, backed = x.snapshot(instance), y.snapshot(twin)
    assert (rewound.status, rewound.current_step, rewound.history, rewound.completed_steps) == (
        backed.status, backed.current_step, backed.history, backed.completed_steps)
    assert rewound.current_step == "plan"


def test_rewind_runs_the_enter_hook_of_each_step_it_returns_to_as_back_does():
    calls = Calls()
    steps = [Step(name, enter=calls.hook(name)) for name in ("a", "b", "c", "d")]
    x, instance = started(chain(*steps))
    for _ in range(3):
        x.next(instance)
    calls.log.clear()

    x.rewind(instance, "a")

    assert calls.log == ["c", "b", "a"]


def test_rewind_is_one_rewind_event_naming_the_steps_left():
    x, instance = at_fourth_step()

    outcome = x.rewind(instance, "plan")

    assert trail(outcome.events) == [("rewind", "plan")]
    assert outcome.events[0].data == {"steps_left": ["confirm", "address"]}


def test_rewind_to_a_step_not_in_the_history_is_refused():
    x, instance = at_fourth_step()

    outcome = x.rewind(instance, "nowhere")

    assert (outcome.moved, outcome.code) == (False, "not_in_history")
    assert "address, plan, account" in (outcome.message or "")


def test_rewind_to_the_current_step_is_refused():
    x, instance = at_fourth_step()

    outcome = x.rewind(instance, "confirm")

    assert (outcome.code, outcome.message) == (
        "not_in_history", 'Step "confirm" is the current step: Workflow "w" can rewind to '
                          "address, plan, account")


def test_rewind_with_one_step_of_history_is_refused_as_back_is():
    x, instance = started(wizard("only", "second"))

    assert x.rewind(instance, "only").code == "no_previous_step"


def test_rewind_goes_to_the_latest_time_a_step_was_entered():
    x, instance = started(wizard("a", "b", "c"))
    x.next(instance)
    x.back(instance)  # history a; then a, b again
    x.next(instance)
    x.next(instance)

    x.rewind(instance, "b")

    assert x.snapshot(instance).history == ("a", "b")


def test_rewind_stops_the_work_of_the_step_it_leaves():
    definition = chain(Step("a"), Step("slow", operations=[Operation("job", run=lambda c: 1)]))
    x, instance = started(definition, autorun=False)
    x.next(instance)
    token = x.claim()

    x.rewind(instance, "a")

    snapshot = x.snapshot(instance)
    assert snapshot.operation("job").status == "cancelled"
    assert [s.token for s in snapshot.stopping] == [token]


def test_the_steps_offered_are_the_earlier_steps_of_the_history_newest_first():
    x, instance = at_fourth_step()

    assert earlier_steps(x.snapshot(instance)) == ("address", "plan", "account")
    assert Rewind.offers(x.snapshot(instance)) == {"step": ("address", "plan", "account")}


def test_what_applies_asks_rewind_without_a_step():
    x, instance = at_fourth_step()
    fresh, first = started(wizard("only", "second"))

    assert applies(x.definitions["w"], x.snapshot(instance), x.env())["rewind"].allowed
    assert applies(fresh.definitions["w"], fresh.snapshot(first), fresh.env())[
        "rewind"].code == "no_previous_step"


def test_rewind_of_a_completed_instance_reopens_it_once_confirmed():
    x, instance = at_fourth_step()
    x.next(instance)

    found = verdict(x.definitions["w"], x.snapshot(instance), x.env(), Rewind("plan"))
    outcome = x.rewind(instance, "plan")

    assert found.allowed and found.confirm == 'Workflow "w" is completed: going back reopens it'
    assert outcome.moved
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.completed_at) == ("running", None)


def test_rewind_of_a_completed_instance_that_does_not_reopen_is_refused():
    x, instance = at_fourth_step(reopen_completed=False)
    x.next(instance)

    outcome = x.rewind(instance, "plan")

    assert (outcome.code, x.snapshot(instance).status) == ("reopen_forbidden", "completed")


def test_rewind_after_cancel_is_refused():
    x, instance = at_fourth_step()
    x.cancel(instance)

    assert x.rewind(instance, "plan").code == "cancelled"


def test_rewind_emits_no_back_event():
    x, instance = at_fourth_step()

    x.rewind(instance, "account")

    assert "back" not in kinds(x.events_of(instance))
