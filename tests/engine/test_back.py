"""back: the previous step of the history becomes current again."""

from __future__ import annotations

from django_workflows.engine import Operation, Step, StopAttempt, Workflow

from .helpers_navigation import Calls, chain, created, kinds, raises, started, trail, wizard


def at_third_step() -> tuple:
    x, instance = started(wizard("account", "plan", "confirm"))
    x.next(instance)
    x.next(instance)
    return x, instance


def test_back_makes_the_previous_step_current_again():
    x, instance = at_third_step()

    outcome = x.back(instance)

    snapshot = x.snapshot(instance)
    assert outcome.moved
    assert (snapshot.status, snapshot.current_step) == ("running", "plan")


def test_back_pops_the_last_history_entry():
    x, instance = at_third_step()

    x.back(instance)

    assert x.snapshot(instance).history == ("account", "plan")


def test_back_removes_the_previous_step_from_the_completed_steps():
    x, instance = at_third_step()

    x.back(instance)

    assert x.snapshot(instance).completed_steps == ("account",)


def test_back_emits_back_with_the_step_returned_to():
    x, instance = at_third_step()

    outcome = x.back(instance)

    assert trail(outcome.events) == [("back", "plan")]


def test_back_twice_returns_to_the_first_step():
    x, instance = at_third_step()
    x.back(instance)

    x.back(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "account"
    assert snapshot.history == ("account",)
    assert snapshot.completed_steps == ()


def test_back_then_next_goes_forward_again():
    x, instance = at_third_step()
    x.back(instance)

    x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "confirm"
    assert snapshot.history == ("account", "plan", "confirm")


def test_back_skips_over_steps_that_were_unavailable():
    x, instance = started(chain(Step("account"), Step("plan", when=lambda ctx: False),
                                Step("confirm")))
    x.next(instance)

    x.back(instance)

    assert x.snapshot(instance).current_step == "account"


def test_back_runs_the_enter_hook_of_the_step_returned_to():
    calls = Calls()
    x, instance = started(chain(Step("account", enter=calls.hook("enter account")),
                                Step("plan", leave=calls.hook("leave plan"))))
    x.next(instance)

    x.back(instance)

    assert calls.log == ["enter account", "enter account"]


def test_back_does_not_run_the_background_work_of_the_step_again():
    runs = []
    definition = chain(Step("provision", operations=[
        Operation("create-tenant", run=lambda ctx: runs.append(1))]), Step("welcome"))
    x, instance = started(definition)
    x.next(instance)

    outcome = x.back(instance)

    assert len(runs) == 1
    assert "operation-queued" not in kinds(outcome.events)
    assert x.snapshot(instance).operation("create-tenant").status == "succeeded"


def test_back_with_a_single_history_entry_is_refused():
    x, instance = started(wizard("account", "plan"))

    outcome = x.back(instance)

    assert (outcome.moved, outcome.code) == (False, "no_previous_step")
    assert outcome.message == 'Workflow "w" has no previous step'
    assert x.snapshot(instance).current_step == "account"


def test_back_before_start_is_refused():
    x, instance = created(wizard("account", "plan"))

    outcome = x.back(instance)

    assert outcome.code == "no_previous_step"
    assert x.snapshot(instance).status == "idle"


def test_back_from_a_blocked_step_runs_again_with_errors_cleared():
    x, instance = started(chain(Step("account"),
                                Step("plan", validate=lambda ctx: "Pick a plan")))
    x.next(instance)
    x.next(instance)

    x.back(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "account")
    assert snapshot.errors == ()


def test_back_from_a_failed_step_runs_again():
    x, instance = started(chain(Step("account"), Step("plan", enter=raises("no prices"))))
    x.next(instance)

    x.back(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "account")
    assert snapshot.errors == ()


def test_back_from_a_completed_instance_runs_it_again_at_the_previous_step():
    x, instance = started(wizard("account", "plan"))
    x.next(instance)
    x.next(instance)

    x.back(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "account")


def test_back_after_a_cancel_answers_cancelled():
    x, instance = at_third_step()
    x.cancel(instance)

    outcome = x.back(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")
    assert x.snapshot(instance).current_step == "confirm"


def test_back_is_refused_while_rolling_back():
    definition = chain(Step("account", compensate=lambda ctx: None), Step("plan"))
    x, instance = started(definition, autorun=False)
    x.next(instance)
    x.rollback(instance)
    assert x.snapshot(instance).status == "rolling-back"

    outcome = x.back(instance)

    assert (outcome.moved, outcome.code) == (False, "not_running")
    assert outcome.message == 'Workflow "w" is rolling back'


def test_an_enter_that_raises_on_back_fails_the_workflow():
    entered = []

    def enter(ctx):
        entered.append(1)
        if len(entered) > 1:
            raise RuntimeError("session expired")

    x, instance = started(chain(Step("account", enter=enter), Step("plan")))
    x.next(instance)

    outcome = x.back(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "account")
    assert snapshot.errors == ("session expired",)
    assert trail(outcome.events) == [("back", "account"), ("error", "account")]


# -- work of the step being left -----------------------------------------------------------

def slow_second_step() -> Workflow:
    return chain(Step("account"),
                 Step("provision", operations=[Operation("create-tenant", run=lambda ctx: 1)]))


def test_back_tells_a_running_attempt_of_the_step_left_to_stop():
    x, instance = started(slow_second_step(), autorun=False)
    x.next(instance)
    token = x.claim()

    outcome = x.back(instance)

    assert StopAttempt(instance, token, 'Workflow step "provision" was left') in outcome.effects
    assert x.snapshot(instance).operation("create-tenant").status == "cancelled"
    assert "operation-cancelled" in kinds(outcome.events)


def test_back_withdraws_a_queued_attempt_of_the_step_left():
    x, instance = started(slow_second_step(), autorun=False)
    x.next(instance)
    token = x.pending[0].token

    outcome = x.back(instance)

    assert [e.token for e in outcome.effects if isinstance(e, StopAttempt)] == [token]
    assert x.pending == []


def test_the_late_result_of_an_attempt_stopped_by_back_is_discarded():
    x, instance = started(slow_second_step(), autorun=False)
    x.next(instance)
    token = x.claim()
    x.back(instance)

    x.finish(token)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "account"
    assert snapshot.operation("create-tenant").status == "cancelled"
    assert snapshot.stopping == ()


# -- nested children -------------------------------------------------------------------------

def with_child() -> Workflow:
    child = Workflow("child", steps=[Step("c1"), Step("c2")],
                     transitions=[*wizard("c1", "c2").transitions])
    return chain(Step("account"), Step("setup", nested=child), Step("done"))


def test_a_running_child_goes_back_first():
    x, instance = started(with_child())
    x.next(instance)
    x.next(instance)
    child = x.snapshot(instance).nested
    assert child.current_step == "c2"

    x.back(instance)

    assert x.snapshot(child.id).current_step == "c1"
    assert x.snapshot(instance).current_step == "setup"


def test_when_the_child_cannot_go_back_the_parent_does():
    x, instance = started(with_child())
    x.next(instance)

    x.back(instance)

    assert x.snapshot(instance).current_step == "account"


def test_back_from_a_completed_workflow_clears_its_completion_time():
    x, i = started(wizard("a", "b"))
    x.next(i)
    x.next(i)
    assert x.snapshot(i).completed_at is not None

    x.back(i)

    assert x.snapshot(i).status == "running"
    assert x.snapshot(i).completed_at is None
