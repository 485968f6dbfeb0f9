""""What applies now" and the commands themselves never disagree.

Random walks over the example's workflows (hypothesis): people give commands
(as the customer, an operator or a manager), change the state, workers run
pending attempts and time passes. Before every command the engine is asked
what applies; the command that follows must then be accepted exactly when the
answer allowed it, refused with the same code otherwise, and the question
itself must run no hook with effects.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_workflows import engine, registry
from django_workflows.testing import LocalExecutor
from example_project.shop.models import StockItem
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PEOPLE = ("customer", "operator")

STATES: dict[str, list[dict[str, Any]]] = {
    "onboarding": [{"name": "Ann Lee", "email": "ann@example.com"}, {"email": "nope"},
                   {"plan": "pro"}, {"invite_code": "FRIEND-PRO"}, {"accept_terms": True}],
    "identity-check": [{"document_number": "X1234567"}, {"document_number": "12"},
                       {"document_type": "id_card"}, {"review": {"decision": "approved"}},
                       {"document_type": "passport"}],
    "order-fulfilment": [{"payment_method": "pm_card_declined"},
                         {"payment_method": "pm_card_ok"}, {"address": {"country": "JP"}}],
    "expense-approval": [{"approval": {"decision": "approved"}}, {"amount": 0},
                         {"receipt": None}, {"amount": 12.5}],
}
INITIAL = {
    "onboarding": None,
    "order-fulfilment": {
        "order_number": "A-1", "customer": {"name": "Ann", "email": "ann@example.com"},
        "items": [{"sku": "MUG", "quantity": 2}],
        "payment_method": "pm_card_ok", "currency": "EUR", "address": {"country": "DE"}},
    "expense-approval": {"employee": "ann", "amount": 42.5, "currency": "EUR",
                         "category": "travel", "description": "Train",
                         "receipt": "r.pdf"},
}

# Inputs people give the example's tasks (good and bad ones).
INPUTS = [{"decision": "approved"}, {"decision": "rejected", "reason": "Expired"},
          {"decision": "rejected", "comment": "No"}, {"decision": "rejected"},
          {"decision": "maybe"}]
# ``next`` and ``complete`` most often, so that walks get deep into the workflows.
COMMAND_NAMES = ["next"] * 6 + ["complete"] * 3 + [*engine.ACTIONS, *engine.TASK_COMMANDS]
move = st.one_of(
    st.tuples(st.just("command"), st.sampled_from(COMMAND_NAMES), st.sampled_from(PEOPLE),
              st.booleans(), st.integers(0, len(INPUTS) - 1)),
    st.tuples(st.just("state"), st.integers(0, 4), st.sampled_from(PEOPLE), st.booleans()),
    st.tuples(st.just("work"), st.integers(0, 3)),
    st.tuples(st.just("time"), st.sampled_from([1, 60, 700])),
)


class RecordingCall:
    """How the executor calls hooks: it records which hooks were called."""

    def __init__(self) -> None:
        self.called: list[Any] = []

    def __call__(self, hook: Any, *args: Any) -> Any:
        self.called.append(hook)
        return engine.context.call_directly(hook, *args)


def deciding_hooks(snapshot: engine.WorkflowSnapshot) -> set[Any]:
    """The hooks a dry run may call: ``validate`` and the exit guards of the tree."""
    found: set[Any] = set()
    for node in snapshot.tree():
        definition = registry.get(node.workflow)
        found |= {step.validate for step in definition.steps if step.validate}
        if definition.exit_guard:
            found.add(definition.exit_guard)
    return found


def walk(workflow: str, moves: list[tuple[Any, ...]], users: dict[str, Any]) -> int:
    """Play ``moves`` on a new, started instance; the number of commands checked."""
    call = RecordingCall()
    x = LocalExecutor(*registry.all_definitions(), autorun=False, call=call)
    root = x.create(workflow, INITIAL[workflow])
    x.start(root)
    checked = 0
    for kind, *args in moves:
        tree = x.snapshot(root)
        if kind in ("command", "state"):
            who, to_child = args[1], args[2]
            target = tree.nested.id if to_child and tree.nested is not None else root
            x.user, x.actor = users[who], who
        if kind == "command":
            name, declared = args[0], engine.COMMANDS[args[0]]
            call.called.clear()
            verdict = engine.applies(x.definitions[workflow], tree, x.env(), target=target,
                                     commands=[declared])[name]
            assert set(call.called) <= deciding_hooks(tree), "a dry run ran a hook with effects"
            assert x.snapshot(root) is tree, "a dry run changed the instance"
            if name == "complete":
                given = declared(input=INPUTS[args[3]])
            elif name == "rewind":  # the first step of its history, where it has one
                given = declared(step=(x.snapshot(target).history or ("nowhere",))[0])
            else:
                given = declared()
            outcome = x.command(target, given)
            if name == "complete" and verdict.allowed:
                # Asked without an input: the input itself may still be refused.
                assert outcome.moved or outcome.code in ("invalid_input", "validation_failed")
                checked += 1
                continue
            assert outcome.moved is verdict.allowed, (name, verdict, outcome.code, outcome.message)
            if not verdict.allowed:
                assert outcome.code == verdict.code, (name, verdict, outcome.message)
            checked += 1
        elif kind == "state":
            node = x.snapshot(target)
            patches = STATES[node.workflow]
            x.update_state(target, {**node.state, **patches[args[0] % len(patches)]})
        elif kind == "work":
            for _ in range(args[0] + 1):
                token = x.claim()
                if token is None:
                    break
                x.finish(token)
        else:
            x.advance(args[0])
    return checked


@pytest.fixture
def users(db):
    StockItem.objects.create(sku="MUG", name="Mug", price_cents=1290, on_hand=10**6)
    return {"customer": UserFactory(username="ann"),
            "operator": UserFactory(username="olga", is_staff=True)}


@pytest.mark.parametrize("workflow", ["onboarding", "order-fulfilment", "expense-approval"])
# (Mail goes to Django's in-memory outbox: the test runner makes every mailer that.)
@override_settings(SHOP_PAYMENTS={"FAILURE_RATE": 0.0, "LOST_RESPONSE_RATE": 0.0,
                                  "LATENCY": 0.0, "SLOW_LATENCY": 0.0})
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(moves=st.lists(move, min_size=1, max_size=40))
def test_what_applies_agrees_with_every_command(workflow, moves, users):
    walk(workflow, moves, users)
