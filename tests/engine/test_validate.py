"""validate: run the current step's validate, store its errors, block or unblock."""

from __future__ import annotations

import pytest

from django_workflows.engine import Step

from .helpers_navigation import chain, created, raises, started, trail


def validating(result, **step) -> tuple:
    """A started instance whose first step's validate returns ``result``."""
    return started(chain(Step("account", validate=lambda ctx: result, **step), Step("plan")))


@pytest.mark.parametrize("result", [None, "", [], ()], ids=["none", "empty-string",
                                                              "empty-list", "empty-tuple"])
def test_an_empty_result_is_valid(result):
    x, instance = validating(result)

    outcome = x.validate(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "running"
    assert x.snapshot(instance).errors == ()


def test_a_message_is_one_error():
    x, instance = validating("Email is required")

    x.validate(instance)

    assert x.snapshot(instance).errors == ("Email is required",)


def test_a_list_of_messages_is_used_as_it_is():
    x, instance = validating(["Email is required", "Name is required"])

    x.validate(instance)

    assert x.snapshot(instance).errors == ("Email is required", "Name is required")


def test_a_step_without_validate_is_valid():
    x, instance = started(chain(Step("account"), Step("plan")))

    outcome = x.validate(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "running"


def test_errors_block_the_workflow():
    x, instance = validating("Email is required")

    outcome = x.validate(instance)

    assert (outcome.moved, outcome.code) == (False, "validation_failed")
    assert outcome.message == "Email is required"
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("blocked", "account")


def test_the_refusal_message_joins_every_error():
    x, instance = validating(["Email is required", "Name is required"])

    outcome = x.validate(instance)

    assert outcome.message == "Email is required; Name is required"


def test_validate_emits_validate_with_the_errors():
    x, instance = validating(["Email is required"])

    outcome = x.validate(instance)

    assert trail(outcome.events) == [("validate", "account")]
    assert outcome.events[0].data["errors"] == ["Email is required"]


def test_a_valid_step_emits_validate_without_errors():
    x, instance = validating(None)

    outcome = x.validate(instance)

    assert trail(outcome.events) == [("validate", "account")]
    assert outcome.events[0].data["errors"] == []


def test_validate_does_not_move_to_the_next_step():
    x, instance = validating(None)

    x.validate(instance)

    assert x.snapshot(instance).current_step == "account"
    assert x.snapshot(instance).completed_steps == ()


def test_a_blocked_workflow_runs_again_once_it_validates():
    answers = {"email": ""}
    x, instance = started(chain(
        Step("account", validate=lambda ctx: None if answers["email"] else "Email is required"),
        Step("plan")))
    x.next(instance)
    assert x.snapshot(instance).status == "blocked"
    answers["email"] = "a@example.com"

    outcome = x.validate(instance)

    assert outcome.moved
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("running", ())


def test_validate_turns_a_failed_workflow_running_as_the_original_does():
    entered = []

    def enter(ctx):
        entered.append(1)
        if len(entered) == 1:
            raise RuntimeError("directory is down")

    x, instance = started(chain(Step("account", enter=enter), Step("plan")))
    assert x.snapshot(instance).status == "failed"

    x.validate(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("running", ())


def test_validate_turns_a_failed_workflow_blocked_when_it_has_errors():
    x, instance = validating("Email is required", enter=raises("directory is down"))
    assert x.snapshot(instance).status == "failed"

    x.validate(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("blocked", ("Email is required",))


def test_validate_before_any_step_was_entered_is_refused():
    x, instance = created(chain(Step("account")))

    outcome = x.validate(instance)

    assert (outcome.moved, outcome.code) == (False, "no_current_step")
    assert outcome.events == ()


def test_validate_after_a_cancel_answers_cancelled():
    x, instance = validating(None)
    x.cancel(instance)

    outcome = x.validate(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")
    assert x.snapshot(instance).status == "cancelled"


def test_validate_is_refused_while_rolling_back():
    x, instance = started(chain(Step("account", compensate=lambda ctx: None), Step("plan")),
                          autorun=False)
    x.next(instance)
    x.rollback(instance)

    outcome = x.validate(instance)

    assert (outcome.moved, outcome.code) == (False, "not_running")
    assert x.snapshot(instance).status == "rolling-back"


def test_a_validate_that_raises_fails_the_workflow():
    x, instance = started(chain(Step("account", validate=raises("schema service is down")),
                                Step("plan")))

    outcome = x.validate(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("failed", ("schema service is down",))
    assert outcome.error == "schema service is down"
    assert trail(outcome.events) == [("error", "account")]
