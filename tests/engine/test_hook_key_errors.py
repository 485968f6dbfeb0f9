"""A KeyError in user code names the hook and the key, not only ``'email'``.

A key the state does not have reads ``The validate hook of step "account" read
state["email"], which the state does not have``; any other KeyError names the
hook that raised it. The state still behaves as a read-only mapping.
"""

from __future__ import annotations

import pytest

from django_workflows.engine import Branch, Operation, Step, Transition, Workflow

from .helpers_navigation import chain, started, wizard


def reads_email(ctx):
    return ctx.state["email"]


def missing(hook: str) -> str:
    return f'{hook} read state["email"], which the state does not have'


@pytest.mark.parametrize("hook", ["validate", "leave"])
def test_a_hook_of_the_step_reading_a_missing_key_says_which_hook_and_key(hook):
    x, instance = started(chain(Step("account", **{hook: reads_email}), Step("plan")),
                          {"plan": "pro"})

    outcome = x.next(instance)

    snapshot = x.snapshot(instance)
    assert snapshot.status == "failed"
    assert snapshot.errors == (missing(f'The {hook} hook of step "account"'),)
    assert outcome.events[-1].error == missing(f'The {hook} hook of step "account"')


def test_an_enter_hook_reading_a_missing_key_says_which_hook_and_key():
    x, instance = started(chain(Step("account"), Step("plan", enter=reads_email)), {})

    x.next(instance)

    assert x.snapshot(instance).errors == (missing('The enter hook of step "plan"'),)


def test_a_when_reading_a_missing_key_says_which_hook_and_key():
    x, instance = started(chain(Step("account", when=reads_email), Step("plan")), {})

    assert x.snapshot(instance).errors == (missing('The when hook of step "account"'),)


def test_a_transition_guard_reading_a_missing_key_names_the_transition():
    definition = Workflow("w", steps=[Step("plan"), Step("pro")],
                          transitions=[Transition("plan", "pro", when=reads_email)])
    x, instance = started(definition, {})

    x.next(instance)

    assert x.snapshot(instance).errors == (
        missing('The guard of the transition from "plan" to "pro"'),)


def test_an_exit_guard_reading_a_missing_key_refuses_the_cancel_saying_so():
    x, instance = started(wizard("account", exit_guard=lambda ctx: not ctx.state["paid"]), {})

    outcome = x.cancel(instance)

    assert outcome.code == "cancel_refused"
    assert outcome.message == ('The exit guard of Workflow "w" read state["paid"], which the '
                               "state does not have")


def test_an_operation_reading_a_missing_key_says_which_operation_and_key():
    definition = chain(Step("provision", operations=[Operation("create-tenant",
                                                               run=reads_email)]))
    x, instance = started(definition, {})

    snapshot = x.snapshot(instance)
    assert snapshot.errors == (missing('The operation "create-tenant"'),)
    assert snapshot.operations[0].error.name == "KeyError"


def test_a_branch_reading_a_missing_key_says_so_under_the_branch_s_name():
    definition = chain(Step("welcome", parallel=[Branch("mail", run=reads_email)]))
    x, instance = started(definition, {})

    assert missing('Branch "mail": The branch') in x.snapshot(instance).errors


def test_a_key_error_that_is_not_the_state_s_names_the_hook():
    def enter(ctx):
        return {"eu": 0.2}[ctx.state["region"]]

    x, instance = started(chain(Step("account", enter=enter)), {"region": "us"})

    assert x.snapshot(instance).errors == ("The enter hook of step \"account\" raised "
                                           "KeyError 'us'",)


def test_a_hook_may_still_catch_the_key_error_and_use_get_and_in():
    seen: list = []

    def enter(ctx):
        try:
            ctx.state["email"]
        except KeyError as error:
            seen.append(error.args)
        seen.append((ctx.state.get("email", "none"), "email" in ctx.state, dict(ctx.state)))

    x, instance = started(chain(Step("account", enter=enter)), {"plan": "pro"})

    assert seen == [("email",), ("none", False, {"plan": "pro"})]
    assert x.snapshot(instance).status == "running"


def test_other_errors_keep_their_own_message():
    def enter(ctx):
        raise RuntimeError("CRM is down")

    x, instance = started(chain(Step("account", enter=enter)), {})

    assert x.snapshot(instance).errors == ("CRM is down",)
