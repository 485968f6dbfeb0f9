"""skip: leave the current step without validating or completing it."""

from __future__ import annotations

from django_workflows.engine import Operation, Step, StopAttempt, Transition, Workflow

from .helpers_navigation import Calls, chain, created, kinds, raises, started, trail, wizard


def test_skip_moves_to_the_following_step():
    x, instance = started(wizard("account", "plan"))

    outcome = x.skip(instance)

    assert outcome.moved
    assert x.snapshot(instance).current_step == "plan"


def test_skip_records_the_step_as_skipped_not_completed():
    x, instance = started(wizard("account", "plan"))

    x.skip(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.skipped_steps == ("account",)
    assert snapshot.completed_steps == ()


def test_a_skipped_step_stays_in_the_history():
    x, instance = started(wizard("account", "plan"))

    x.skip(instance)

    assert x.snapshot(instance).history == ("account", "plan")


def test_skip_emits_skip_with_the_step_then_enters_the_next():
    x, instance = started(wizard("account", "plan"))

    outcome = x.skip(instance)

    assert trail(outcome.events) == [("skip", "account"), ("step-enter", "plan")]


def test_skip_neither_validates_nor_runs_leave():
    calls = Calls()
    x, instance = started(chain(Step("account", validate=calls.hook("validate", "Required"),
                                     leave=calls.hook("leave")), Step("plan")))

    x.skip(instance)

    assert calls.log == []
    assert x.snapshot(instance).status == "running"


def test_skip_follows_the_first_transition_whose_guard_holds():
    definition = Workflow("w", steps=[Step("plan"), Step("pro"), Step("team")],
                          transitions=[Transition("plan", "pro", when=lambda ctx: False),
                                       Transition("plan", "team")])
    x, instance = started(definition)

    x.skip(instance)

    assert x.snapshot(instance).current_step == "team"


def test_skipping_the_last_step_completes_the_workflow():
    x, instance = started(wizard("account", "plan"))
    x.next(instance)

    outcome = x.skip(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("completed", "plan")
    assert snapshot.completed_steps == ("account",)
    assert trail(outcome.events) == [("skip", "plan"), ("complete", "plan")]


def test_skip_unblocks_a_blocked_step_and_clears_its_errors():
    x, instance = started(chain(Step("account", validate=lambda ctx: "Email is required"),
                                Step("plan")))
    x.next(instance)

    x.skip(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "plan")
    assert snapshot.errors == ()


def test_a_step_skipped_twice_is_recorded_once():
    x, instance = started(wizard("account", "plan", "confirm"))
    x.next(instance)
    x.skip(instance)
    x.back(instance)

    x.skip(instance)

    assert x.snapshot(instance).skipped_steps == ("plan",)


def test_skip_before_start_is_refused():
    x, instance = created(wizard("account", "plan"))

    outcome = x.skip(instance)

    assert (outcome.moved, outcome.code) == (False, "not_running")
    assert x.snapshot(instance).status == "idle"


def test_skip_of_a_failed_step_is_refused():
    x, instance = started(chain(Step("account", enter=raises("boom")), Step("plan")))

    outcome = x.skip(instance)

    assert (outcome.moved, outcome.code) == (False, "not_running")
    assert x.snapshot(instance).current_step == "account"


def test_skip_of_a_completed_instance_is_refused():
    x, instance = started(wizard("account"))
    x.next(instance)

    outcome = x.skip(instance)

    assert outcome.code == "not_running"
    assert x.snapshot(instance).skipped_steps == ()


def test_skip_after_a_cancel_answers_cancelled():
    x, instance = started(wizard("account", "plan"))
    x.cancel(instance)

    outcome = x.skip(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")


def test_skip_enters_the_next_step_running_its_enter_hook():
    calls = Calls()
    x, instance = started(chain(Step("account"), Step("plan", enter=calls.hook("enter plan"))))

    x.skip(instance)

    assert calls.log == ["enter plan"]


def test_skip_tells_the_work_of_the_skipped_step_to_stop():
    definition = chain(Step("provision", operations=[Operation("create-tenant",
                                                               run=lambda ctx: 1)]),
                       Step("welcome"))
    x, instance = started(definition, autorun=False)
    token = x.claim()

    outcome = x.skip(instance)

    assert StopAttempt(instance, token, 'Workflow step "provision" was skipped') in outcome.effects
    assert x.snapshot(instance).operation("create-tenant").status == "cancelled"
    assert kinds(outcome.events)[:2] == ["operation-cancelled", "skip"]
    assert x.snapshot(instance).current_step == "welcome"
