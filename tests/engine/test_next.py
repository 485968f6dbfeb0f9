"""next: validate, leave, follow the first transition whose guard holds, or complete."""

from __future__ import annotations

import pytest

from django_workflows.engine import Operation, Step, Transition, Workflow

from .helpers_navigation import Calls, chain, created, kinds, raises, started, trail, wizard


def branching(*transitions: Transition, **step: object) -> Workflow:
    return Workflow("w", steps=[Step("plan", **step), Step("free"), Step("pro"), Step("team")],
                    transitions=transitions)


# -- moving on -----------------------------------------------------------------------

def test_next_moves_to_the_following_step():
    x, instance = started(wizard("account", "plan"))

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert outcome.moved
    assert (snapshot.status, snapshot.current_step) == ("running", "plan")
    assert snapshot.completed_steps == ("account",)
    assert snapshot.history == ("account", "plan")


def test_next_emits_validate_step_leave_then_step_enter():
    x, instance = started(wizard("account", "plan"))

    outcome = x.next(instance)

    assert trail(outcome.events) == [("validate", "account"), ("step-leave", "account"),
                                     ("step-enter", "plan")]


def test_next_runs_leave_of_the_step_left_then_enter_of_the_next():
    calls = Calls()
    x, instance = started(chain(Step("account", leave=calls.hook("leave account")),
                                Step("plan", enter=calls.hook("enter plan"))))

    x.next(instance)

    assert calls.log == ["leave account", "enter plan"]


def test_leave_sees_the_instance_state():
    seen = []
    x, instance = started(chain(Step("account", leave=lambda ctx: seen.append(ctx.state["email"])),
                                Step("plan")), {"email": "a@example.com"})

    x.next(instance)

    assert seen == ["a@example.com"]


# -- refusals ------------------------------------------------------------------------

def test_next_is_refused_before_start():
    x, instance = created(wizard("account", "plan"))

    outcome = x.next(instance)

    assert (outcome.moved, outcome.code) == (False, "not_running")
    assert x.snapshot(instance).status == "idle"


def test_next_is_refused_on_a_completed_instance():
    x, instance = started(wizard("account"))
    x.next(instance)

    outcome = x.next(instance)

    assert outcome.code == "not_running"


def test_next_is_refused_on_a_failed_instance():
    x, instance = started(chain(Step("account", enter=raises("boom")), Step("plan")))

    outcome = x.next(instance)

    assert outcome.code == "not_running"
    assert x.snapshot(instance).current_step == "account"


def test_next_is_refused_on_a_blocked_instance():
    x, instance = started(chain(Step("account", validate=lambda ctx: "Email is required"),
                                Step("plan")))
    x.next(instance)

    outcome = x.next(instance)

    assert (outcome.moved, outcome.code) == (False, "not_running")
    assert outcome.events == ()


def test_next_after_a_cancel_answers_cancelled():
    x, instance = started(wizard("account", "plan"))
    x.cancel(instance)

    outcome = x.next(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")
    assert outcome.message == 'Workflow "w" was cancelled'


def test_a_refused_next_changes_nothing():
    x, instance = started(wizard("account"))
    x.next(instance)
    before = x.snapshot(instance)

    outcome = x.next(instance)

    assert outcome.events == ()
    assert x.snapshot(instance) == before


def test_next_is_refused_while_the_steps_work_is_in_progress():
    definition = chain(Step("provision", operations=[Operation("create-tenant",
                                                               run=lambda ctx: 1)]), Step("done"))
    x, instance = started(definition, autorun=False)

    outcome = x.next(instance)

    assert (outcome.moved, outcome.code) == (False, "work_in_progress")
    assert outcome.message == 'Workflow step "provision" still has work in progress'
    assert x.snapshot(instance).current_step == "provision"


# -- validation --------------------------------------------------------------------------

def test_a_step_that_does_not_validate_blocks_next():
    x, instance = started(chain(Step("account", validate=lambda ctx: "Email is required"),
                                Step("plan")))

    outcome = x.next(instance)

    assert (outcome.moved, outcome.code) == (False, "validation_failed")
    assert outcome.message == "Email is required"
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("blocked", "account")


def test_the_errors_of_a_blocked_next_are_stored():
    x, instance = started(chain(
        Step("account", validate=lambda ctx: ["Email is required", "Name is required"]),
        Step("plan")))

    outcome = x.next(instance)

    assert x.snapshot(instance).errors == ("Email is required", "Name is required")
    assert outcome.message == "Email is required; Name is required"


def test_a_blocked_next_emits_validate_with_the_errors():
    x, instance = started(chain(Step("account", validate=lambda ctx: "Email is required"),
                                Step("plan")))

    outcome = x.next(instance)

    assert trail(outcome.events) == [("validate", "account")]
    assert outcome.events[0].data["errors"] == ["Email is required"]


def test_a_blocked_next_does_not_run_leave():
    calls = Calls()
    x, instance = started(chain(Step("account", validate=lambda ctx: "Email is required",
                                     leave=calls.hook("leave")), Step("plan")))

    x.next(instance)

    assert calls.log == []


def test_validate_sees_the_instance_state():
    definition = chain(Step("account",
                            validate=lambda ctx: None if ctx.state["email"] else "Email required"),
                       Step("plan"))
    x, instance = started(definition, {"email": "a@example.com"})

    x.next(instance)

    assert x.snapshot(instance).current_step == "plan"


# -- transitions -------------------------------------------------------------------------

def test_the_first_transition_whose_guard_holds_is_followed():
    definition = branching(Transition("plan", "free", when=lambda ctx: False),
                           Transition("plan", "pro", when=lambda ctx: True),
                           Transition("plan", "team", when=lambda ctx: True))
    x, instance = started(definition)

    x.next(instance)

    assert x.snapshot(instance).current_step == "pro"


def test_a_transition_without_a_guard_always_holds():
    definition = branching(Transition("plan", "team"), Transition("plan", "pro"))
    x, instance = started(definition)

    x.next(instance)

    assert x.snapshot(instance).current_step == "team"


def test_guards_are_asked_in_declaration_order_until_one_holds():
    calls = Calls()
    definition = branching(Transition("plan", "free", when=calls.hook("free?", False)),
                           Transition("plan", "pro", when=calls.hook("pro?", True)),
                           Transition("plan", "team", when=calls.hook("team?", True)))
    x, instance = started(definition)

    x.next(instance)

    assert calls.log == ["free?", "pro?"]


def test_guards_see_the_instance_state():
    definition = branching(Transition("plan", "pro", when=lambda ctx: ctx.state["seats"] == 1),
                           Transition("plan", "team"))
    x, instance = started(definition, {"seats": 5})

    x.next(instance)

    assert x.snapshot(instance).current_step == "team"


def test_only_transitions_from_the_current_step_count():
    definition = Workflow("w", steps=[Step("a"), Step("b"), Step("c")],
                          transitions=[Transition("b", "c"), Transition("a", "b")])
    x, instance = started(definition)

    x.next(instance)

    assert x.snapshot(instance).current_step == "b"


# -- completion --------------------------------------------------------------------------

def test_without_a_transition_that_holds_next_completes_the_workflow():
    definition = branching(Transition("plan", "pro", when=lambda ctx: False))
    x, instance = started(definition)

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.status == "completed"
    assert snapshot.completed_at == x.clock.now()


def test_completion_keeps_the_last_step_current_and_completed():
    x, instance = started(wizard("account", "plan"))
    x.next(instance)

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "plan"
    assert snapshot.completed_steps == ("account", "plan")
    assert snapshot.history == ("account", "plan")


def test_completion_emits_complete_with_the_last_step():
    x, instance = started(wizard("account"))

    outcome = x.next(instance)

    assert trail(outcome.events) == [("validate", "account"), ("step-leave", "account"),
                                     ("complete", "account")]


# -- hooks that raise --------------------------------------------------------------------

@pytest.mark.parametrize("hook", ["validate", "leave"])
def test_a_hook_of_the_step_that_raises_fails_the_workflow_on_that_step(hook):
    x, instance = started(chain(Step("account", **{hook: raises("CRM is down")}),
                                Step("plan")))

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "account")
    assert snapshot.errors == ("CRM is down",)
    assert outcome.error == "CRM is down"
    assert trail(outcome.events)[-1] == ("error", "account")
    assert outcome.events[-1].error == "CRM is down"


def test_a_leave_that_raises_does_not_complete_the_step():
    x, instance = started(chain(Step("account", leave=raises("CRM is down")), Step("plan")))

    outcome = x.next(instance)

    assert "step-leave" not in kinds(outcome.events)
    assert x.snapshot(instance).completed_steps == ()


def test_a_transition_guard_that_raises_fails_the_workflow():
    definition = branching(Transition("plan", "pro", when=raises("billing is down")))
    x, instance = started(definition)

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "plan")
    assert snapshot.errors == ("billing is down",)
    assert kinds(outcome.events)[-1] == "error"


def test_an_enter_of_the_next_step_that_raises_fails_the_workflow_there():
    x, instance = started(chain(Step("account"), Step("plan", enter=raises("no prices"))))

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "plan")
    assert snapshot.completed_steps == ("account",)



# -- a step with a nested child ----------------------------------------------------------

def with_child(*child_steps: Step) -> Workflow:
    return chain(Step("account"), Step("setup", nested=chain(*child_steps, id="child")),
                 Step("done"))


def test_next_is_given_to_a_running_child_first():
    x, instance = started(with_child(Step("c1"), Step("c2")))
    x.next(instance)
    child = x.snapshot(instance).nested

    outcome = x.next(instance)

    assert outcome.moved
    assert x.snapshot(child.id).current_step == "c2"
    assert x.snapshot(instance).current_step == "setup"


def test_when_the_child_completes_the_parent_goes_on_in_the_same_next():
    x, instance = started(with_child(Step("c1")))
    x.next(instance)
    child = x.snapshot(instance).nested

    outcome = x.next(instance)

    assert x.snapshot(child.id).status == "completed"
    assert x.snapshot(instance).current_step == "done"
    assert [(e.instance_id, e.type) for e in outcome.events][-3:] == [
        (instance, "validate"), (instance, "step-leave"), (instance, "step-enter")]


def test_a_child_that_does_not_validate_refuses_the_parents_next():
    x, instance = started(with_child(Step("c1", validate=lambda ctx: "Street is required")))
    x.next(instance)
    child = x.snapshot(instance).nested

    outcome = x.next(instance)

    assert (outcome.moved, outcome.code) == (False, "validation_failed")
    assert x.snapshot(child.id).status == "blocked"
    assert (x.snapshot(instance).status, x.snapshot(instance).current_step) == ("running",
                                                                                 "setup")


def test_a_child_hook_that_raises_on_next_fails_the_child_and_the_parent_step():
    x, instance = started(with_child(Step("c1", leave=raises("geocoder is down"))))
    x.next(instance)
    child = x.snapshot(instance).nested

    outcome = x.next(instance)

    assert x.snapshot(child.id).status == "failed"
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "setup")
    assert snapshot.errors == ("geocoder is down",)
    assert outcome.error == "geocoder is down"
