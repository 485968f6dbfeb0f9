"""update_state: replace the state with a value or a function of it; unblock a blocked step."""

from __future__ import annotations

import datetime

import pydantic

from django_workflows.engine import Operation, Step

from .helpers_navigation import chain, created, kinds, raises, started, trail, wizard

SCHEMA = {
    "type": "object",
    "properties": {"email": {"type": "string", "format": "email"},
                   "seats": {"type": "integer", "minimum": 1}},
    "required": ["email"],
}


class Signup(pydantic.BaseModel):
    email: str
    seats: int = 1


def test_update_state_replaces_the_state_with_a_value():
    x, instance = started(wizard("account", initial={"email": "", "plan": None}))

    outcome = x.update_state(instance, {"email": "a@example.com"})

    assert outcome.moved
    assert x.snapshot(instance).state == {"email": "a@example.com"}


def test_update_state_replaces_the_state_with_what_a_function_of_it_returns():
    x, instance = started(wizard("account", initial={"seats": 1}))

    x.update_state(instance, lambda state: {**state, "seats": state["seats"] + 1})

    assert x.snapshot(instance).state == {"seats": 2}


def test_a_function_changing_its_argument_without_returning_it_changes_nothing():
    x, instance = started(wizard("account", initial={"seats": 1}))

    def grow(state):
        state["seats"] = 99
        return {"seats": 2}

    x.update_state(instance, grow)

    assert x.snapshot(instance).state == {"seats": 2}


def test_update_state_emits_state_update_with_the_current_step():
    x, instance = started(wizard("account"))

    outcome = x.update_state(instance, {"email": "a@example.com"})

    assert trail(outcome.events) == [("state-update", "account")]


def test_update_state_works_before_start_and_leaves_the_instance_idle():
    x, instance = created(wizard("account"))

    x.update_state(instance, {"email": "a@example.com"})

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.state) == ("idle", {"email": "a@example.com"})


def test_update_state_leaves_a_failed_workflow_failed():
    x, instance = started(chain(Step("account", enter=raises("boom"))))

    x.update_state(instance, {"email": "a@example.com"})

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("failed", ("boom",))


def test_update_state_leaves_a_completed_workflow_completed():
    x, instance = started(wizard("account"))
    x.next(instance)

    x.update_state(instance, {"note": "archived"})

    assert x.snapshot(instance).status == "completed"


# -- what a state may be ------------------------------------------------------------------

def test_a_state_that_is_not_an_object_is_refused():
    x, instance = started(wizard("account", initial={"email": ""}))

    outcome = x.update_state(instance, ["a@example.com"])

    assert (outcome.moved, outcome.code) == (False, "invalid_state")
    assert outcome.message == "The state must be a JSON object"
    assert x.snapshot(instance).state == {"email": ""}


def test_a_function_that_returns_nothing_is_refused():
    x, instance = started(wizard("account", initial={"email": ""}))

    outcome = x.update_state(instance, lambda state: state.update(email="a@example.com"))

    assert outcome.code == "invalid_state"
    assert x.snapshot(instance).state == {"email": ""}


def test_a_state_that_is_not_json_is_refused():
    x, instance = started(wizard("account", initial={"email": ""}))

    outcome = x.update_state(instance, {"signed_up": datetime.date(2024, 5, 1)})

    assert (outcome.moved, outcome.code) == (False, "invalid_state")
    assert outcome.message.startswith("The state is not JSON: ")


def test_a_state_with_a_number_json_cannot_hold_is_refused():
    x, instance = started(wizard("account", initial={"score": 0}))

    outcome = x.update_state(instance, {"score": float("nan")})

    assert (outcome.moved, outcome.code) == (False, "invalid_state")
    assert outcome.message.startswith("The state is not JSON: ")
    assert x.snapshot(instance).state == {"score": 0}


def test_a_refused_update_changes_nothing():
    x, instance = started(wizard("account", initial={"email": ""}))
    before = x.snapshot(instance)

    outcome = x.update_state(instance, "a@example.com")

    assert outcome.events == ()
    assert x.snapshot(instance) == before


def test_a_state_breaking_the_json_schema_is_refused_naming_the_field():
    x, instance = started(wizard("account", initial={"email": "a@example.com"},
                                 state_schema=SCHEMA))

    outcome = x.update_state(instance, {"email": "a@example.com", "seats": 0})

    assert (outcome.moved, outcome.code) == (False, "invalid_state")
    assert [error.field for error in outcome.field_errors] == ["seats"]
    assert outcome.message == "seats: 0 is less than the minimum of 1"


def test_every_field_breaking_the_schema_is_named():
    x, instance = started(wizard("account", initial={"email": "a@example.com"},
                                 state_schema=SCHEMA))

    outcome = x.update_state(instance, {"email": "not an email", "seats": "many"})

    assert [error.field for error in outcome.field_errors] == ["email", "seats"]


def test_a_missing_required_field_is_named():
    x, instance = started(wizard("account", initial={"email": "a@example.com"},
                                 state_schema=SCHEMA))

    outcome = x.update_state(instance, {"seats": 2})

    assert [(e.field, e.message) for e in outcome.field_errors] == [
        ("email", "This field is required.")]


def test_a_state_breaking_the_pydantic_model_is_refused_naming_the_field():
    x, instance = started(wizard("account", initial={"email": "a@example.com"},
                                 state_schema=Signup))

    outcome = x.update_state(instance, {"email": "a@example.com", "seats": "many"})

    assert outcome.code == "invalid_state"
    assert [error.field for error in outcome.field_errors] == ["seats"]
    assert x.snapshot(instance).state == {"email": "a@example.com"}


def test_a_state_satisfying_the_schema_is_accepted():
    x, instance = started(wizard("account", initial={"email": "a@example.com"},
                                 state_schema=SCHEMA))

    outcome = x.update_state(instance, {"email": "b@example.com", "seats": 3})

    assert outcome.moved
    assert x.snapshot(instance).state == {"email": "b@example.com", "seats": 3}


def test_update_state_after_a_cancel_answers_cancelled():
    x, instance = started(wizard("account", initial={"email": ""}))
    x.cancel(instance)

    outcome = x.update_state(instance, {"email": "a@example.com"})

    assert (outcome.moved, outcome.code) == (False, "cancelled")
    assert x.snapshot(instance).state == {"email": ""}


# -- unblocking ---------------------------------------------------------------------------

def test_a_blocked_workflow_becomes_running_with_its_errors_cleared():
    x, instance = started(chain(
        Step("account", validate=lambda ctx: None if ctx.state["email"] else "Email is required"),
        Step("plan")), {"email": ""})
    x.next(instance)
    assert x.snapshot(instance).status == "blocked"

    x.update_state(instance, {"email": "a@example.com"})

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("running", ())
    assert snapshot.current_step == "account"


def test_a_blocked_auto_step_validates_and_moves_on_once_the_state_is_given():
    x, instance = started(chain(
        Step("check", advance="auto",
             validate=lambda ctx: None if ctx.state["email"] else "Email is required"),
        Step("done")), {"email": ""})
    assert x.snapshot(instance).status == "blocked"

    x.update_state(instance, {"email": "a@example.com"})

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "done")
    assert snapshot.completed_steps == ("check",)


def needs_a_card(ctx):
    if not ctx.state.get("card"):
        ctx.block("A payment card is needed")
    return {"charged": ctx.state["card"]}


def test_an_operation_that_blocked_runs_again_once_the_state_is_given():
    x, instance = started(chain(
        Step("pay", advance="auto", operations=[Operation("charge", run=needs_a_card)]),
        Step("done")), {"card": None})
    assert x.snapshot(instance).status == "blocked"
    assert x.snapshot(instance).errors == ("A payment card is needed",)

    outcome = x.update_state(instance, {"card": "4242"})

    assert kinds(outcome.events)[:2] == ["state-update", "operation-queued"]
    snapshot = x.snapshot(instance)
    assert snapshot.operation("charge").status == "succeeded"
    assert snapshot.operation("charge").result == {"charged": "4242"}
    assert snapshot.current_step == "done"


def test_a_schema_error_about_a_long_value_stays_short():
    from django_workflows.engine import validate_state

    problems = validate_state({"type": "object", "properties": {"note": {"maxLength": 3}}},
                              {"note": "x" * 5000})

    assert [p.field for p in problems] == ["note"]
    assert len(problems[0].message) <= 200
    assert problems[0].message.endswith("…")
