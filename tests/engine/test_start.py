"""create and start: a new instance is idle; start runs it from its first available step."""

from __future__ import annotations

from dataclasses import replace

from django_workflows.engine import Env, Start, Step, Transition, Workflow, apply
from django_workflows.engine.snapshot import StoppingAttempt

from .helpers_navigation import Calls, chain, created, kinds, raises, started, trail, wizard


def test_a_new_instance_is_idle_with_its_initial_state():
    x, instance = created(wizard("account", "plan", initial={"email": ""}))

    snapshot = x.snapshot(instance)
    assert snapshot.status == "idle"
    assert snapshot.state == {"email": ""}
    assert snapshot.current_step is None
    assert (snapshot.history, snapshot.completed_steps, snapshot.skipped_steps) == ((), (), ())
    assert snapshot.started_at is None


def test_a_new_instance_can_be_given_its_own_state():
    x, instance = created(wizard("account", initial={"email": ""}),
                          {"email": "a@example.com"})

    assert x.snapshot(instance).state == {"email": "a@example.com"}


def test_start_runs_the_instance_from_its_first_step():
    x, instance = created(wizard("account", "plan"))

    outcome = x.start(instance)

    snapshot = x.snapshot(instance)
    assert outcome.moved
    assert (snapshot.status, snapshot.current_step) == ("running", "account")
    assert snapshot.history == ("account",)


def test_start_records_when_it_started():
    x, instance = created(wizard("account"))
    x.clock.advance(30)

    x.start(instance)

    assert x.snapshot(instance).started_at == x.clock.now()


def test_start_emits_start_then_step_enter():
    x, instance = created(wizard("account", "plan"))

    outcome = x.start(instance)

    assert trail(outcome.events) == [("start", None), ("step-enter", "account")]


def test_the_first_step_is_the_first_one_declared_not_the_first_transition():
    definition = Workflow("w", steps=[Step("b"), Step("a")], transitions=[Transition("a", "b")])
    x, instance = created(definition)

    x.start(instance)

    assert x.snapshot(instance).current_step == "b"


def test_start_runs_the_first_steps_enter_hook():
    calls = Calls()
    x, instance = created(chain(Step("account", enter=calls.hook("enter account"))))

    x.start(instance)

    assert calls.log == ["enter account"]


def test_an_unavailable_first_step_is_skipped_for_the_next_available_one():
    definition = chain(Step("intro", when=lambda ctx: False), Step("account"))
    x, instance = created(definition)

    x.start(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "account"
    assert snapshot.skipped_steps == ("intro",)
    assert snapshot.history == ("account",)


def test_a_workflow_without_steps_completes_at_once():
    x, instance = created(Workflow("w"))

    outcome = x.start(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.status == "completed"
    assert snapshot.completed_at == x.clock.now()
    assert trail(outcome.events) == [("start", None), ("complete", None)]


def test_a_workflow_whose_steps_are_all_unavailable_completes_without_a_current_step():
    definition = chain(Step("a", when=lambda ctx: False), Step("b", when=lambda ctx: False))
    x, instance = created(definition)

    x.start(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("completed", None)
    assert snapshot.skipped_steps == ("a", "b")


def test_start_is_refused_once_started():
    x, instance = started(wizard("account", "plan"))
    before = x.snapshot(instance)

    outcome = x.start(instance)

    assert (outcome.moved, outcome.code) == (False, "already_started")
    assert outcome.message == 'Workflow "w" has already started'
    assert outcome.events == ()
    assert x.snapshot(instance) == before


def test_start_is_refused_on_a_completed_instance():
    x, instance = started(wizard("account"))
    x.next(instance)

    outcome = x.start(instance)

    assert outcome.code == "already_started"
    assert x.snapshot(instance).status == "completed"


def test_start_is_refused_on_a_failed_instance():
    x, instance = started(chain(Step("account", enter=raises("boom"))))

    outcome = x.start(instance)

    assert outcome.code == "already_started"


def test_start_after_a_cancel_answers_cancelled():
    x, instance = created(wizard("account"))
    x.cancel(instance)

    outcome = x.start(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")
    assert x.snapshot(instance).status == "cancelled"


def test_start_is_refused_while_an_attempt_told_to_stop_has_not_stopped():
    x, instance = created(wizard("account"))
    stopping = StoppingAttempt("t1", "operation", "sync", "Cancelled", since=0.0)
    snapshot = replace(x.snapshot(instance), stopping=(stopping,))

    outcome = apply(x.definitions["w"], snapshot, Start(), Env(now=1.0))

    assert (outcome.moved, outcome.code) == (False, "still_stopping")
    assert outcome.message == 'Workflow "w" still has an active step attempt'
    assert outcome.snapshot.status == "idle"


def test_a_first_step_whose_enter_raises_fails_the_start():
    x, instance = created(chain(Step("account", enter=raises("directory is down"))))

    outcome = x.start(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", "account")
    assert snapshot.errors == ("directory is down",)
    assert outcome.error == "directory is down"
    assert kinds(outcome.events) == ["start", "step-enter", "error"]


def test_a_first_step_whose_when_raises_fails_before_any_step_is_entered():
    x, instance = created(chain(Step("account", when=raises("flags are down"))))

    x.start(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("failed", None)
    assert snapshot.errors == ("flags are down",)
