"""The invariant checks of ``bench/invariants.py`` against the real engine.

Random walks of commands (every command, state updates, sweeps, several users)
over the example's and the test app's workflows, run in-process; afterwards
every instance's event log, replayed, must give its stored snapshot, and the
other checks must hold. Then each check is shown to catch what it is about:
a row tampered with, a deadline left behind, a charge made twice.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone

from bench import invariants
from django_workflows import services
from django_workflows.exceptions import WorkflowError
from django_workflows.models import Deadline, WorkflowEvent, WorkflowInstance
from example_project.shop.models import Charge, Refund, StockItem
from tests.factories import UserFactory

# Real commits: work is handed to the (in-process) runner after commit, as in production.
pytestmark = pytest.mark.django_db(transaction=True)

COMMANDS = ("start", "next", "back", "skip", "validate", "retry", "cancel", "rollback")
LIMITS = invariants.Limits(heartbeat_timeout=60, sweep_interval=5, slack=10)

ORDER = {"order_number": "A-1", "customer": {"name": "Ann", "email": "ann@example.com"},
         "items": [{"sku": "mug", "quantity": 2}],
         "payment_method": "pm_card_ok", "currency": "EUR", "address": {"country": "DE"}}
STATES: dict[str, list[dict[str, Any]]] = {
    "wizard": [{"email": "a@b.com", "plan": "pro"}, {"email": "a@b.org"}, {"email": ""}],
    "onboarding": [
        {"name": "Ann", "email": "ann@example.com", "invite_code": "", "plan": "pro",
         "accept_terms": True},
        {"name": "Bob", "email": "bob@example.com", "invite_code": "FRIEND-PRO", "plan": None,
         "accept_terms": True},
        {"name": "", "email": "nope", "invite_code": "", "plan": None, "accept_terms": False},
    ],
    "identity-check": [
        {"document_type": "passport", "document_number": "X1234567"},
        {"document_type": "id_card", "document_number": "Y7654321"},
        {"document_type": "passport", "document_number": "bad"},
    ],
    "order-fulfilment": [ORDER, {**ORDER, "payment_method": "pm_card_declined"},
                         {**ORDER, "address": {"country": "JP"}}],
    "expense-approval": [
        {"employee": "ann", "amount": 12.5, "currency": "EUR", "category": "meals",
         "description": "Lunch", "receipt": None},
        {"employee": "ann", "amount": 0, "currency": "EUR", "category": "meals",
         "description": "", "receipt": None},
    ],
}
# What people decide, when a task waits for them.
TASK_INPUTS = [{"decision": "approved"}, {"decision": "rejected", "reason": "blurred"},
               {"decision": "rejected", "comment": "no"}, {"decision": "rejected"}]
WORKFLOWS = ["wizard", "failing-hook", "back-office", "parent", "compensated", "onboarding",
             "order-fulfilment", "expense-approval", "guarded-exit", "slow-retries"]


def check(**options: Any) -> dict[str, list[str]]:
    data = invariants.load(connection, now=options.pop("now", None))
    return invariants.check_all(data, LIMITS, **options)


def walk(rng: random.Random, workflow: str, users: list[Any], moves: int) -> None:
    owner = users[0]
    # The order's initial state breaks its schema: an order is created with one.
    state = rng.choice(STATES[workflow]) if workflow == "order-fulfilment" else None
    instance = services.create(workflow, owner=owner, user=owner, state=state,
                               start=rng.random() < 0.7)
    for _ in range(moves):
        row = WorkflowInstance.objects.get(pk=instance.pk)
        target = row
        if row.nested_id and rng.random() < 0.4:
            target = WorkflowInstance.objects.filter(pk=row.nested_id).first() or row
        user = rng.choice(users)
        roll = rng.random()
        try:
            if roll < 0.25 and STATES.get(target.workflow):
                services.update_state(target, rng.choice(STATES[target.workflow]), user=user)
            elif roll < 0.32:
                # Fire what fell due (retry delays, timeouts) as if time had passed.
                services.sweep(now=timezone.now() + timedelta(seconds=rng.choice([3, 700])))
            elif roll < 0.45 and target.snap.open_task is not None:
                services.complete(target, input=dict(rng.choice(TASK_INPUTS)), user=user)
            else:
                services.command(target, rng.choice(COMMANDS), user=user)
        except WorkflowError:
            pass  # refused, stale, busy: the walk goes on


@pytest.fixture
def users(db: None) -> list[Any]:
    StockItem.objects.create(sku="mug", name="Mug", price_cents=900, on_hand=10_000)
    olga = UserFactory(username="olga", is_staff=True)  # decides reviews and claims
    olga.groups.add(*(Group.objects.get_or_create(name=name)[0]
                      for name in ("operators", "managers")))
    return [UserFactory(username="ann"), type(olga).objects.get(pk=olga.pk)]


@pytest.mark.parametrize("seed", range(4))
def test_random_walks_keep_every_invariant(seed: int, users: list[Any], settings: Any) -> None:
    settings.SHOP_PAYMENTS = {"FAILURE_RATE": 0.3, "LOST_RESPONSE_RATE": 0.2, "LATENCY": 0}
    rng = random.Random(seed)
    for workflow in WORKFLOWS:
        for _ in range(3):
            walk(rng, workflow, users, moves=rng.randint(5, 30))
    assert WorkflowEvent.objects.count() > 200  # the walks did move
    # Far enough ahead that deadlines still set (a 60s step timeout) are not overdue.
    results = check(seen={})
    assert results == {name: [] for name in results}


def test_the_replay_rules() -> None:
    events = [{"type": t, "step": s, "data": d} for t, s, d in [
        ("start", None, {}), ("step-enter", "a", {}), ("validate", "a", {"errors": ["x"]}),
        ("state-update", "a", {}), ("validate", "a", {"errors": []}), ("step-leave", "a", {}),
        ("step-enter", "b", {}), ("skip", "b", {}), ("step-enter", "c", {}),
        ("back", "b", {}), ("operation-blocked", "b", {}), ("retry", "b", {}),
        ("error", "b", {}), ("rollback", "b", {"phase": "started"}),
        ("error", "b", {"item": "step:a"}),
    ]]
    replayed = invariants.replay(events)
    assert (replayed.status, replayed.current_step, replayed.history, replayed.completed_steps,
            replayed.skipped_steps) == ("rolling-back", "b", ["a", "b"], ["a"], ["b"])
    done = invariants.replay([*events, {"type": "rollback", "data": {"phase": "finished"}}])
    assert (done.status, done.current_step, done.history, done.completed_steps) == (
        "idle", None, [], [])
    assert invariants.replay([{"type": "teleport", "step": None, "data": {}}]).problems


def test_a_snapshot_that_disagrees_with_its_events_is_caught(users: list[Any]) -> None:
    instance = services.create("wizard", owner=users[0], start=True)
    assert check()["history"] == []
    WorkflowInstance.objects.filter(pk=instance.pk).update(status="completed")
    assert check()["history"] == [f"wizard {instance.pk}: status is 'completed', its events "
                                  "say 'running'"]


def test_a_step_skipped_because_its_when_said_no_replays_from_its_event(
        users: list[Any]) -> None:
    instance = services.create("wizard", owner=users[0], state={"email": "a@b.org"},
                               start=True)
    services.next(instance)  # "plan" only applies to .com addresses: skipped
    assert instance.skipped_steps == ["plan"]
    assert check()["history"] == []
    WorkflowInstance.objects.filter(pk=instance.pk).update(
        snapshot={**instance.snapshot, "skipped_steps": []})
    assert check()["history"] == [
        f"wizard {instance.pk}: skipped_steps is [], its events say ['plan']"]


def test_an_overdue_deadline_and_a_lost_attempt_are_caught(users: list[Any]) -> None:
    instance = services.create("slow-retries", owner=users[0], start=True)  # waits 100s
    assert check()["deadlines"] == [] and check()["live_work"] == []
    later = datetime.now(UTC) + timedelta(seconds=200)  # retry due at 100s, timeout at 60s
    assert sorted(check(now=later)["deadlines"]) == [
        f"slow-retries {instance.pk}: operation charge should have been retried 100s ago",
        f"slow-retries {instance.pk}: retry deadline overdue by 100s",
        f"slow-retries {instance.pk}: step pay is 140s past its timeout and still running",
        f"slow-retries {instance.pk}: step-timeout deadline overdue by 140s"]
    Deadline.objects.filter(instance=instance).delete()
    assert check()["live_work"] == [f"slow-retries {instance.pk}: operation charge waits for "
                                    "a retry that nothing will start (no deadline, no "
                                    "stopping attempt)"]


def test_an_instance_waiting_out_a_retry_delay_is_unsettled_but_not_stuck(
        users: list[Any]) -> None:
    instance = services.create("slow-retries", owner=users[0], start=True)  # waits 100s
    data = invariants.load(connection)
    assert invariants.unsettled(data) == [str(instance.pk)]
    assert invariants.waiting_for_retry(data, str(instance.pk))
    described = invariants.describe(data, str(instance.pk))
    assert described["operations"][0]["status"] == "waiting"
    assert sorted(d["kind"] for d in described["deadlines"]) == ["retry", "step-timeout"]

    Deadline.objects.filter(instance=instance, kind="retry").delete()  # nothing would retry
    assert not invariants.waiting_for_retry(invariants.load(connection), str(instance.pk))


def test_duplicated_payments_are_caught(users: list[Any]) -> None:
    order = services.create("order-fulfilment", owner=users[0], state=ORDER, start=True)
    order.refresh_from_db()  # its work ran after the commit
    assert order.status == "completed"
    assert check()["payments"] == []
    charge = Charge.objects.get(reference=str(order.pk))
    now = timezone.now()
    twice = Charge.objects.create(id="ch_twice", idempotency_key="other", reference=str(order.pk),
                                  amount_cents=1800, currency="EUR", payment_method="pm_card_ok",
                                  status=Charge.SUCCEEDED, created_at=now, settles_at=now)
    Refund.objects.create(id="re_1", idempotency_key="r1", charge=charge, amount_cents=1800)
    Refund.objects.create(id="re_2", idempotency_key="r2", charge=charge, amount_cents=1800)
    assert sorted(check()["payments"]) == sorted([
        f"charge {charge.id} refunded 2 times",
        f"order {order.pk} charged 2 times: {sorted([charge.id, twice.id])}",
        f"order {order.pk}: refunds [{charge.id!r}] but its payment was never rolled back",
        f"order {order.pk}: paid with charge {charge.id}, but the provider keeps ['ch_twice']",
    ])


def test_an_order_refunded_while_its_rollback_goes_on_is_not_a_payment_violation(
        users: list[Any]) -> None:
    order = services.create("order-fulfilment", owner=users[0], state=ORDER, start=True)
    charge = Charge.objects.get(reference=str(order.pk))
    # The refund worker refunded, then died before its result was recorded.
    Refund.objects.create(id="re_1", idempotency_key="r1", charge=charge, amount_cents=1800)
    WorkflowInstance.objects.filter(pk=order.pk).update(status="rolling-back")
    data = invariants.load(connection)

    assert invariants.check_payments(data) == []
    assert invariants.unsettled(data) == [str(order.pk)]  # lost, if it stays like this


def test_a_rolled_back_order_is_refunded_and_releases_its_stock(users: list[Any]) -> None:
    order = services.create("order-fulfilment", owner=users[0], state=ORDER, start=True)
    services.rollback(order)
    order.refresh_from_db()
    assert order.status == "idle"
    assert Refund.objects.count() == 1
    results = check()
    assert results == {name: [] for name in results}
    StockItem.objects.filter(pk="mug").update(reserved=5)
    assert check()["stock"] == ["stock mug: reserved 5, reservations add up to 0"]


def test_acknowledged_writes_must_be_there(users: list[Any]) -> None:
    instance = services.create("wizard", owner=users[0], start=True)
    gone = str(uuid.uuid4())
    assert check(seen={str(instance.pk): 2})["acknowledged"] == []
    assert instance.revision == 2  # created, then started
    assert set(check(seen={str(instance.pk): 5, gone: 1})["acknowledged"]) == {
        f"instance {instance.pk} is at revision 2, a client was shown 5",
        f"instance {gone} was acknowledged to a client (revision 1) and is gone"}


def test_a_limit_overrun_and_a_forgotten_waiting_attempt_are_caught(settings: Any) -> None:
    from django_workflows import Limit, Operation, Step, Workflow, registry
    from django_workflows.models import Attempt

    definition = Workflow(id="limited-once", steps=[Step("call", operations=[Operation(
        "call", run=lambda ctx: {}, concurrency=Limit(key="partner", max=1))])])
    registry.register(definition, origin="tests.reliability.test_invariants")
    try:
        settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                     "RUNNER": "tests.services.test_slots.HoldingRunner"}
        first, second = (services.create("limited-once", start=True) for _ in range(2))
        assert check()["limits"] == [] and check()["live_work"] == []  # waiting is live

        now = timezone.now()
        Attempt.objects.filter(instance=second).update(status="running", claimed_at=now,
                                                       heartbeat_at=now)
        Attempt.objects.filter(instance=first).update(status="running", claimed_at=now,
                                                      heartbeat_at=now)
        assert check()["limits"] == ["2 attempts of key partner ran at once; its max is 1"]

        Attempt.objects.filter(instance=first).update(
            status="finished", finished_at=now - timedelta(seconds=100))
        Attempt.objects.filter(instance=second).update(  # it came before the first ended
            status="waiting", claimed_at=None, enqueued_at=now - timedelta(seconds=200))
        (token,) = Attempt.objects.filter(instance=second).values_list("token", flat=True)
        assert check()["limits"] == [f"attempt {token} waits for a slot of partner, which "
                                     "has had room (0 of 1 taken)"]
    finally:
        registry.unregister(definition.id)
