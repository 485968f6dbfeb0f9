"""Workflows the service, API and admin tests drive (autodiscovered)."""

from __future__ import annotations

from django_workflows import Branch, Operation, Step, Task, Transition, Workflow

from . import (
    background,  # noqa: F401 - registers the workflows of the qcluster tests
    durable,  # noqa: F401 - registers the workflows of durable code
    durable_quotes,  # noqa: F401 - registers the quote that a retry from a step mends
)
from .models import Note
from .schedules import SCHEDULES, report, tick  # noqa: F401 - registered from here
from .waiting import payment, reminder  # noqa: F401 - registered from here


def _require_email(ctx):
    return None if ctx.state.get("email") else "Email is required"


def _write_note_then_fail(ctx):
    Note.objects.create(text="written by a failing hook")
    raise RuntimeError("enter exploded")


wizard = Workflow(
    id="wizard", version=1, title="Wizard",
    initial={"email": "", "plan": None},
    state_schema={
        "type": "object",
        "properties": {"email": {"type": "string", "maxLength": 200},
                       "plan": {"type": ["string", "null"], "enum": [None, "free", "pro"]},
                       "age": {"type": "integer", "minimum": 0}},
    },
    steps=[
        Step("account", validate=_require_email),
        Step("plan", when=lambda ctx: ctx.state.get("email", "").endswith(".com")),
        Step("confirm"),
    ],
    transitions=[Transition("account", "plan"), Transition("plan", "confirm")],
)

long_manual = Workflow(
    id="long-manual", version=1, title="Forty manual steps",
    steps=[Step(f"s{i}") for i in range(40)],
    transitions=[Transition(f"s{i}", f"s{i + 1}") for i in range(39)],
)

failing_hook = Workflow(
    id="failing-hook", version=1,
    steps=[Step("first"), Step("second", enter=_write_note_then_fail)],
    transitions=[Transition("first", "second")],
)


def _charge(ctx):
    ctx.progress(1, 2, "charging")
    ctx.log("charged")
    return {"charge": "ch_1"}


calls: list[str] = []

back_office = Workflow(
    id="back-office", version=1,
    steps=[
        Step("pay", advance="auto",
             operations=[Operation("charge", run=_charge,
                                   rollback=lambda result, ctx: calls.append(f"refund {result}"))]),
        Step("ship", advance="auto",
             parallel=[Branch("stock", run=lambda ctx: calls.append("stock"),
                              compensate=lambda ctx: calls.append("unstock")),
                       Branch("courier", run=lambda ctx: calls.append("courier"))]),
        Step("done"),
    ],
    transitions=[Transition("pay", "ship"), Transition("ship", "done")],
)

child = Workflow(id="child-check", version=1,
                 steps=[Step("review"), Step("decide")],
                 transitions=[Transition("review", "decide")])

parent = Workflow(
    id="parent", version=1,
    steps=[Step("intro"), Step("check", nested=child, advance="auto"), Step("finish")],
    transitions=[Transition("intro", "check"), Transition("check", "finish")],
)


def _always_fails(ctx):
    raise RuntimeError(f"provider down (attempt {ctx.attempt})")


slow_retries = Workflow(
    id="slow-retries", version=1,
    steps=[Step("pay", advance="auto", timeout=60,
                operations=[Operation("charge", run=_always_fails, retries=3, retry_delay=100)]),
           Step("done")],
    transitions=[Transition("pay", "done")],
)


# -- for the API tests (tests/api) ------------------------------------------------------


def _never_exit(ctx):
    return False


guarded_exit = Workflow(id="guarded-exit", version=1, title="Cannot be cancelled",
                        steps=[Step("only")], exit_guard=_never_exit)

compensated = Workflow(
    id="compensated", version=1, title="A step undone by its compensation",
    steps=[Step("first", compensate=lambda ctx: None), Step("second")],
    transitions=[Transition("first", "second")],
)


def _refuse_named_actions(user, instance, action):
    """A user named "no-<action>" (no-view, no-list, no-create, no-skip, ...) may not."""
    return not getattr(user, "username", "").startswith(f"no-{action}")


restricted = Workflow(
    id="restricted", version=1, title="With its own permission rule",
    steps=[Step("one"), Step("two")], transitions=[Transition("one", "two")],
    permission=_refuse_named_actions,
)


DECISION_FORM = {
    "type": "object", "required": ["decision"], "additionalProperties": False,
    "properties": {"decision": {"enum": ["approved", "rejected"], "title": "Decision"},
                   "comment": {"type": "string", "maxLength": 500, "title": "Comment"}},
}

approval = Workflow(
    id="approval", version=1, title="A claim a manager decides",
    initial={"amount": 10},
    steps=[Step("claim"),
           Step("decision", title="Manager's decision",
                task=Task(DECISION_FORM, candidates=["group:managers"], exclude_owner=True,
                          due=3600, escalate_to=["group:directors"])),
           Step("paid"), Step("rejected")],
    transitions=[Transition("claim", "decision"),
                 Transition("decision", "paid",
                            when=lambda ctx: ctx.state["decision"]["decision"] == "approved"),
                 Transition("decision", "rejected")],
)
