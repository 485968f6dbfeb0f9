"""Entering a step: availability (``when``), history, the ``enter`` hook, auto steps, cycles."""

from __future__ import annotations

from django_workflows.engine import Step, Transition, Workflow

from .helpers_navigation import Calls, chain, kinds, raises, started, trail

CYCLE_MESSAGE = ('Workflow "w" moved through more than 1000 steps in one command; '
                 "check its transitions for a cycle")


def never(ctx):
    return False


# -- available steps ----------------------------------------------------------------

def test_an_available_step_becomes_current_and_joins_the_history():
    x, instance = started(chain(Step("account"), Step("plan")))

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "plan")
    assert snapshot.history == ("account", "plan")


def test_entering_a_step_emits_step_enter_for_it():
    x, instance = started(chain(Step("account"), Step("plan")))

    outcome = x.next(instance)

    assert trail(outcome.events)[-1] == ("step-enter", "plan")


def test_a_step_whose_when_holds_is_entered():
    definition = chain(Step("account"), Step("plan", when=lambda ctx: ctx.state["paid"]))
    x, instance = started(definition, {"paid": True})

    x.next(instance)

    assert x.snapshot(instance).current_step == "plan"


def test_when_sees_the_instance_state():
    definition = chain(Step("account"),
                       Step("plan", when=lambda ctx: ctx.state["email"].endswith(".com")),
                       Step("done"))
    x, instance = started(definition, {"email": "a@example.org"})

    x.next(instance)

    assert x.snapshot(instance).current_step == "done"


# -- unavailable steps -----------------------------------------------------------------

def test_an_unavailable_step_is_recorded_as_skipped():
    x, instance = started(chain(Step("account"), Step("plan", when=never), Step("done")))

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "done"
    assert snapshot.skipped_steps == ("plan",)


def test_an_unavailable_step_never_enters_the_history():
    x, instance = started(chain(Step("account"), Step("plan", when=never), Step("done")))

    x.next(instance)

    assert x.snapshot(instance).history == ("account", "done")


def test_an_unavailable_step_emits_a_skip_event_marked_unavailable():
    x, instance = started(chain(Step("account"), Step("plan", when=never), Step("done")))

    outcome = x.next(instance)

    skips = [(e.step, dict(e.data)) for e in outcome.events if e.type == "skip"]
    assert skips == [("plan", {"unavailable": True})]
    assert kinds(outcome.events) == ["validate", "step-leave", "skip", "step-enter"]


def test_an_unavailable_step_is_not_completed():
    x, instance = started(chain(Step("account"), Step("plan", when=never), Step("done")))

    x.next(instance)

    assert x.snapshot(instance).completed_steps == ("account",)


def test_after_an_unavailable_step_the_transitions_from_it_are_followed():
    definition = Workflow("w", steps=[Step("a"), Step("b", when=never), Step("c"), Step("d")],
                          transitions=[Transition("a", "b"), Transition("a", "c"),
                                       Transition("b", "d")])
    x, instance = started(definition)

    x.next(instance)

    assert x.snapshot(instance).current_step == "d"


def test_an_unavailable_last_step_completes_the_workflow_on_the_step_before():
    x, instance = started(chain(Step("account"), Step("upsell", when=never)))

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("completed", "account")
    assert trail(outcome.events)[-1] == ("complete", "account")


def test_a_step_passed_twice_unavailable_is_recorded_skipped_once():
    x, instance = started(chain(Step("account"), Step("plan", when=never), Step("done")))
    x.next(instance)
    x.back(instance)

    x.next(instance)

    assert x.snapshot(instance).skipped_steps == ("plan",)


def test_several_unavailable_steps_in_a_row_are_all_skipped():
    x, instance = started(chain(Step("a"), Step("b", when=never), Step("c", when=never),
                                Step("d")))

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.skipped_steps == ("b", "c")
    assert snapshot.current_step == "d"


def test_a_when_that_raises_fails_the_workflow():
    x, instance = started(chain(Step("account"), Step("plan", when=raises("pricing is down"))))

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.status == "failed"
    assert snapshot.errors == ("pricing is down",)
    assert outcome.error == "pricing is down"
    assert trail(outcome.events)[-1] == ("error", "plan")


# -- enter -----------------------------------------------------------------------------

def test_enter_runs_when_the_step_is_entered():
    calls = Calls()
    x, instance = started(chain(Step("account"), Step("plan", enter=calls.hook("enter plan"))))
    assert calls.log == []

    x.next(instance)

    assert calls.log == ["enter plan"]


def test_enter_gets_the_context_of_the_entered_step():
    seen = []
    definition = chain(Step("account"),
                       Step("plan", enter=lambda ctx: seen.append((ctx.step, dict(ctx.state)))))
    x, instance = started(definition, {"email": "a@example.com"})

    x.next(instance)

    assert seen == [("plan", {"email": "a@example.com"})]


def test_enter_of_an_unavailable_step_does_not_run():
    calls = Calls()
    x, instance = started(chain(Step("a"), Step("b", when=never, enter=calls.hook("enter b")),
                                Step("c")))

    x.next(instance)

    assert calls.log == []


def test_an_enter_that_raises_fails_the_workflow_on_that_step():
    x, instance = started(chain(Step("account"), Step("plan", enter=raises("no prices"))))

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "plan")
    assert snapshot.errors == ("no prices",)
    assert trail(outcome.events)[-2:] == [("step-enter", "plan"), ("error", "plan")]
    assert outcome.events[-1].error == "no prices"


def test_a_hook_error_without_a_message_is_recorded_by_its_class_name():
    x, instance = started(chain(Step("account"), Step("plan", enter=raises("", LookupError))))

    x.next(instance)

    assert x.snapshot(instance).errors == ("LookupError",)


# -- auto steps ----------------------------------------------------------------------

def test_an_auto_step_without_work_validates_and_moves_on_by_itself():
    x, instance = started(chain(Step("check", advance="auto"), Step("done")))

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "done"
    assert snapshot.completed_steps == ("check",)


def test_an_auto_step_that_does_not_validate_is_blocked_on_it():
    x, instance = started(chain(Step("check", advance="auto", validate=lambda ctx: "Not yet"),
                                Step("done")))

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("blocked", "check")
    assert snapshot.errors == ("Not yet",)


def test_a_long_chain_of_auto_steps_is_followed_in_one_command():
    steps = [Step(f"s{n}", advance="auto") for n in range(1000)]

    x, instance = started(chain(*steps))

    snapshot = x.snapshot(instance)
    assert snapshot.status == "completed"
    assert len(snapshot.completed_steps) == 1000


# -- cycles ------------------------------------------------------------------------------

def test_a_cycle_of_auto_steps_fails_the_workflow_instead_of_looping():
    definition = Workflow("w", steps=[Step("a", advance="auto"), Step("b", advance="auto")],
                          transitions=[Transition("a", "b"), Transition("b", "a")])

    x, instance = started(definition)

    snapshot = x.snapshot(instance)
    assert snapshot.status == "failed"
    assert snapshot.errors == (CYCLE_MESSAGE,)


def test_a_cycle_of_unavailable_steps_fails_the_workflow_instead_of_looping():
    definition = Workflow("w", steps=[Step("a"), Step("b", when=never), Step("c", when=never)],
                          transitions=[Transition("a", "b"), Transition("b", "c"),
                                       Transition("c", "b")])
    x, instance = started(definition)

    outcome = x.next(instance)

    assert x.snapshot(instance).status == "failed"
    assert outcome.error == CYCLE_MESSAGE
    assert kinds(outcome.events)[-1] == "error"


def test_a_cycle_is_caught_after_1000_moves():
    entered = Calls()
    definition = Workflow("w", steps=[Step("a", advance="auto", enter=entered.hook("a")),
                                      Step("b", advance="auto", enter=entered.hook("b"))],
                          transitions=[Transition("a", "b"), Transition("b", "a")])

    started(definition)

    assert len(entered.log) == 1000
