"""Hooks: async hooks are awaited; the context's state is read-only; work learns when to stop."""

from __future__ import annotations

import asyncio

import pytest

from django_workflows.engine import (
    Branch,
    Cancelled,
    HookContext,
    Operation,
    Step,
    Transition,
    Workflow,
)

from .helpers_navigation import chain, created, started, wizard


def returning(value, log: list | None = None, name: str = ""):
    """An async hook that yields to the event loop, then returns ``value``."""

    async def hook(*args):
        await asyncio.sleep(0)
        if log is not None:
            log.append(name)
        return value

    return hook


# -- async hooks ------------------------------------------------------------------------------

def test_an_async_enter_is_awaited():
    log: list = []
    x, instance = started(chain(Step("account", enter=returning(None, log, "entered"))))

    assert log == ["entered"]
    assert x.snapshot(instance).status == "running"


def test_an_async_when_is_awaited_for_its_answer():
    x, instance = started(chain(Step("intro", when=returning(False)), Step("account")))

    snapshot = x.snapshot(instance)
    assert snapshot.current_step == "account"
    assert snapshot.skipped_steps == ("intro",)


def test_an_async_validate_is_awaited_for_its_errors():
    x, instance = started(chain(Step("account", validate=returning("Email is required")),
                                Step("plan")))

    outcome = x.next(instance)

    assert outcome.code == "validation_failed"
    assert x.snapshot(instance).errors == ("Email is required",)


def test_an_async_leave_is_awaited():
    log: list = []
    x, instance = started(chain(Step("account", leave=returning(None, log, "left")),
                                Step("plan")))

    x.next(instance)

    assert log == ["left"]


def test_an_async_transition_guard_is_awaited_for_its_answer():
    definition = Workflow("w", steps=[Step("plan"), Step("pro"), Step("team")],
                          transitions=[Transition("plan", "pro", when=returning(False)),
                                       Transition("plan", "team", when=returning(True))])
    x, instance = started(definition)

    x.next(instance)

    assert x.snapshot(instance).current_step == "team"


def test_an_async_exit_guard_is_awaited_for_its_answer():
    x, instance = started(wizard("account", exit_guard=returning(False)))

    outcome = x.cancel(instance)

    assert outcome.code == "cancel_refused"
    assert x.snapshot(instance).status == "running"


def test_an_async_operation_gives_its_awaited_result():
    x, instance = started(chain(Step("provision", operations=[
        Operation("create-tenant", run=returning({"tenant": 7}))])))

    assert x.snapshot(instance).operation("create-tenant").result == {"tenant": 7}


def test_an_async_hook_that_raises_fails_the_workflow_with_its_message():
    async def enter(ctx):
        await asyncio.sleep(0)
        raise RuntimeError("directory is down")

    x, instance = started(chain(Step("account", enter=enter)))

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("failed", ("directory is down",))


def test_async_hooks_work_when_commands_are_given_inside_an_event_loop():
    log: list = []
    definition = chain(Step("account", enter=returning(None, log, "entered"),
                            validate=returning(None)), Step("plan"))

    async def main():
        x, instance = started(definition)
        x.next(instance)
        return x.snapshot(instance)

    snapshot = asyncio.run(main())

    assert log == ["entered"]
    assert snapshot.current_step == "plan"


# -- the context ------------------------------------------------------------------------------

def test_a_hook_cannot_write_to_the_state():
    outcome: list = []

    def enter(ctx):
        try:
            ctx.state["email"] = "changed@example.com"
        except TypeError:
            outcome.append("refused")

    x, instance = started(chain(Step("account", enter=enter)), {"email": "a@example.com"})

    assert outcome == ["refused"]
    assert x.snapshot(instance).state == {"email": "a@example.com"}


def test_changing_a_value_inside_the_context_state_does_not_change_the_instance():
    def enter(ctx):
        ctx.state["tags"].append("vip")

    x, instance = started(chain(Step("account", enter=enter)), {"tags": []})

    assert x.snapshot(instance).state == {"tags": []}


def test_the_context_names_the_instance_the_workflow_the_step_and_the_user():
    seen: list = []
    definition = chain(Step("account"), Step("plan", enter=lambda ctx: seen.append(
        (ctx.instance_id, ctx.workflow, ctx.step, ctx.user))))
    x, instance = started(definition, user="alice")

    x.next(instance)

    assert seen == [(instance, "w", "plan", "alice")]


def test_a_hook_of_a_running_workflow_is_not_cancelled():
    seen: list = []

    def enter(ctx):
        ctx.check_cancelled()
        seen.append(ctx.cancelled)

    started(chain(Step("account", enter=enter)))

    assert seen == [False]


def test_check_cancelled_raises_with_the_reason_once_the_work_was_told_to_stop():
    reason = None
    ctx = HookContext(state={}, instance_id="i1", workflow="w", stop_reason=lambda: reason)
    ctx.check_cancelled()
    reason = "Cancelled"

    with pytest.raises(Cancelled) as raised:
        ctx.check_cancelled()

    assert ctx.cancelled
    assert raised.value.reason == "Cancelled"
    assert str(raised.value) == "Cancelled"


def branch_that_checks(seen: list):
    def run(ctx):
        seen.append(ctx.cancelled)
        try:
            ctx.check_cancelled()
        except Cancelled as stop:
            seen.append(stop.reason)
            raise

    return run


def test_a_branch_learns_that_the_workflow_was_cancelled():
    seen: list = []
    x, instance = started(chain(Step("welcome", parallel=[Branch("mail",
                                                               run=branch_that_checks(seen))])),
                          autorun=False)
    token = x.claim()
    x.cancel(instance)

    x.finish(token)

    assert seen == [True, "Cancelled"]
    assert x.snapshot(instance).status == "cancelled"


def test_a_branch_learns_that_its_step_timed_out():
    seen: list = []
    x, instance = started(chain(Step("welcome", timeout=30, parallel=[
        Branch("mail", run=branch_that_checks(seen))])), autorun=False)
    token = x.claim()
    x.advance(30)

    x.finish(token)

    assert seen == [True, 'Workflow step "welcome" timed out after 30s']
    assert x.snapshot(instance).errors == ('Workflow step "welcome" timed out after 30s',)


def test_a_branch_that_is_not_stopped_is_not_cancelled():
    seen: list = []
    x, instance = created(chain(Step("welcome", parallel=[Branch("mail",
                                                               run=branch_that_checks(seen))])))

    x.start(instance)

    assert seen == [False]
    assert x.snapshot(instance).parallel[0].status == "succeeded"
