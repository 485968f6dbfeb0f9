"""Limits per key (``Limit``, ``Rate``): an attempt over its key's limit waits in our tables,
holding no worker, and is handed out, in its turn, when a slot frees.

The ``charges`` workflow: one auto step whose operation ``charge`` is held to 2 running per
merchant (``state["merchant"]``). A ``HoldingRunner`` stands for the workers: it keeps the
tokens it was handed, and the test runs them (``run_attempt``) when it likes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from django_workflows import (
    Branch,
    Limit,
    Operation,
    Rate,
    Step,
    Workflow,
    clock,
    registry,
    services,
)
from django_workflows.models import Attempt, WorkflowInstance
from django_workflows.runners.worker import run_attempt
from django_workflows.services.slots import hand_out_waiting, waiting_for
from django_workflows.services.sweep import next_deadline_at
from django_workflows.testing import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

HEARTBEAT_TIMEOUT = 60.0


class HoldingRunner:
    """Workers that never come by themselves: the tokens wait here for the test."""

    held: list[str] = []

    def enqueue(self, tokens: Sequence[str]) -> None:
        HoldingRunner.held.extend(tokens)


HOLDING = override_settings(DJANGO_WORKFLOWS={
    "RUNNER": "tests.services.test_slots.HoldingRunner", "HEARTBEAT_TIMEOUT": HEARTBEAT_TIMEOUT})


def merchant(ctx) -> str:
    return f"merchant-{ctx.state['merchant']}"


@pytest.fixture(autouse=True)
def workflows():
    HoldingRunner.held.clear()
    definitions = [
        Workflow(id="charges", steps=[Step("charge", operations=[Operation(
            "charge", run=lambda ctx: "charged",
            concurrency=Limit(key=merchant, max=2))])]),
        Workflow(id="rated", steps=[Step("call", operations=[Operation(
            "call", run=lambda ctx: "called", rate=Rate(key="partner-api", limit=2, per=60))])]),
        Workflow(id="rated-wide", steps=[Step("call", operations=[Operation(
            "call", run=lambda ctx: "called", rate=Rate(key="wide-api", limit=20, per=60))])]),
        Workflow(id="one-at-a-time", steps=[Step("call", operations=[Operation(
            "call", run=lambda ctx: None, concurrency=Limit(key="L", max=1))])]),
        Workflow(id="one-a-minute", steps=[Step("call", operations=[Operation(
            "call", run=lambda ctx: None, rate=Rate(key="R", limit=1, per=60))])]),
        Workflow(id="both", steps=[Step("call", operations=[Operation(
            "call", run=lambda ctx: None, concurrency=Limit(key="kb", max=5),
            rate=Rate(key="kb-rate", limit=1, per=60))])]),
        Workflow(id="fan-out", steps=[Step("fan", parallel=[
            Branch(name, run=lambda ctx: None, concurrency=Limit(key="warehouse", max=1))
            for name in ("a", "b", "c")])]),
        Workflow(id="broken-key", steps=[Step("charge", operations=[Operation(
            "charge", run=lambda ctx: "charged",
            concurrency=Limit(key=lambda ctx: ctx.state["missing"], max=1))])]),
    ]
    for definition in definitions:
        registry.register(definition, origin="tests.services.test_slots")
    yield
    for definition in definitions:
        registry.unregister(definition.id)
    HoldingRunner.held.clear()


def charges(count: int, merchant_id: int = 7) -> list[WorkflowInstance]:
    with HOLDING:
        return [services.create("charges", state={"merchant": merchant_id}, start=True)
                for _ in range(count)]


def attempt_of(instance: WorkflowInstance) -> Attempt:
    return Attempt.objects.filter(instance=instance).latest("enqueued_at")


def done(instance: WorkflowInstance) -> bool:
    return WorkflowInstance.objects.get(pk=instance.pk).operations[0]["status"] == "succeeded"


def run_held(token: str) -> None:
    HoldingRunner.held.remove(token)
    with HOLDING:
        assert run_attempt(token, heartbeat_thread=False)


def test_attempts_over_the_limit_wait_and_are_not_handed_to_the_runner():
    instances = charges(5)

    statuses = [attempt_of(i).status for i in instances]
    assert statuses == ["queued", "queued", "waiting", "waiting", "waiting"]
    assert HoldingRunner.held == [attempt_of(i).token for i in instances[:2]]
    assert all(attempt_of(i).limit_key == "merchant-7" for i in instances)
    # The instance's operation is queued all the same: only the attempt's row says it waits.
    row = WorkflowInstance.objects.get(pk=instances[4].pk)
    assert row.operations[0]["status"] == "queued"


def test_a_waiting_attempt_says_what_it_waits_for():
    instances = charges(3)

    assert waiting_for(attempt_of(instances[2])) == (
        "waiting for a slot (merchant-7: 2 of 2 running)")
    assert waiting_for(attempt_of(instances[0])) == ""


def test_a_finished_attempt_gives_its_slot_to_the_oldest_waiting_one():
    instances = charges(4)
    first = attempt_of(instances[0]).token

    run_held(first)

    assert done(instances[0])
    assert attempt_of(instances[2]).status == "queued"
    assert attempt_of(instances[3]).status == "waiting"
    assert HoldingRunner.held == [attempt_of(i).token for i in (instances[1], instances[2])]


def test_every_waiting_attempt_runs_in_the_end_in_the_order_it_came():
    instances = charges(6)
    order = []
    while HoldingRunner.held:
        token = HoldingRunner.held[0]
        order.append(Attempt.objects.get(token=token).instance_id)
        run_held(token)

    assert order == [i.pk for i in instances]
    assert all(done(i) for i in instances)


def test_keys_do_not_share_slots():
    sevens = charges(3, merchant_id=7)
    eights = charges(2, merchant_id=8)

    assert [attempt_of(i).status for i in sevens] == ["queued", "queued", "waiting"]
    assert [attempt_of(i).status for i in eights] == ["queued", "queued"]


def test_a_cancelled_waiting_attempt_is_dropped_and_the_next_keeps_its_turn():
    instances = charges(4)
    with HOLDING:
        services.cancel(instances[2])

    assert attempt_of(instances[2]).status == "dropped"
    run_held(attempt_of(instances[0]).token)

    assert attempt_of(instances[3]).status == "queued"


def test_a_queued_attempt_cancelled_before_it_ran_frees_its_slot():
    instances = charges(3)
    with HOLDING:
        services.cancel(instances[0])

    assert attempt_of(instances[0]).status == "dropped"
    assert attempt_of(instances[2]).status == "queued"
    assert attempt_of(instances[2]).token in HoldingRunner.held


def test_an_attempt_whose_worker_died_frees_its_slot_when_it_is_recovered():
    instances = charges(3)
    token = attempt_of(instances[0]).token
    assert services.claim_attempt(token, worker="killed-worker") is not None
    Attempt.objects.filter(token=token).update(
        heartbeat_at=timezone.now() - timedelta(seconds=HEARTBEAT_TIMEOUT + 1))
    assert attempt_of(instances[2]).status == "waiting"

    with HOLDING:
        report = services.sweep()

    assert report.interrupted == 1
    assert Attempt.objects.get(token=token).status == "interrupted"
    assert attempt_of(instances[2]).status == "queued"
    assert attempt_of(instances[2]).token in HoldingRunner.held


def test_the_sweep_gives_on_a_slot_whose_release_was_lost():
    instances = charges(3)
    # The worker finished and died before it gave the slot on: its attempt's row says
    # finished, and nothing else happened.
    Attempt.objects.filter(token=attempt_of(instances[0]).token).update(status="finished")

    with HOLDING:
        report = services.sweep()

    assert report.redispatched == 1
    assert attempt_of(instances[2]).status == "queued"


def test_a_rate_lets_its_limit_start_per_window_and_the_sweep_starts_the_next_in_time():
    fake = FakeClock()
    clock.use(fake.now)
    try:
        with HOLDING:
            instances = [services.create("rated", start=True) for _ in range(3)]
        assert [attempt_of(i).status for i in instances] == ["queued", "queued", "waiting"]
        # Its turn is when the first start leaves the window: the sweep sleeps until then.
        waiting = attempt_of(instances[2])
        assert waiting.look_again_at == clock.now_datetime() + timedelta(seconds=60)
        assert next_deadline_at() == waiting.look_again_at
        assert waiting_for(waiting) == (
            "waiting for a slot (partner-api: 2 of 2 started in 60 s)")
        # Finishing does not make room: starts do not come back.
        run_held(attempt_of(instances[0]).token)
        assert attempt_of(instances[2]).status == "waiting"

        fake.advance(59)
        with HOLDING:
            services.sweep()
        assert attempt_of(instances[2]).status == "waiting"

        fake.advance(1.5)
        with HOLDING:
            services.sweep()
        assert attempt_of(instances[2]).status == "queued"
        assert attempt_of(instances[2]).token in HoldingRunner.held
    finally:
        clock.use(None)


def test_a_key_function_that_fails_fails_the_workflow_with_a_message_naming_it():
    with HOLDING:
        instance = services.create("broken-key", start=True)

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert row.status == "failed"
    assert 'concurrency key of operation "charge"' in row.errors[0]
    assert "missing" in row.errors[0]
    assert not Attempt.objects.filter(instance=instance).exists()


def test_branches_are_held_to_their_limit_too():
    with HOLDING:
        instance = services.create("fan-out", start=True)

    rows = Attempt.objects.filter(instance=instance).order_by("target")
    assert [(a.target, a.status) for a in rows] == [
        ("fan:a", "queued"), ("fan:b", "waiting"), ("fan:c", "waiting")]
    run_held(rows[0].token)
    assert [a.status for a in Attempt.objects.filter(instance=instance).order_by("target")
            ] == ["finished", "queued", "waiting"]


def test_a_window_that_opens_for_many_hands_them_all_out_at_once_in_order():
    fake = FakeClock()
    clock.use(fake.now)
    try:
        with HOLDING:
            instances = [services.create("rated-wide", start=True) for _ in range(45)]
            assert [attempt_of(i).status for i in instances].count("waiting") == 25
            fake.advance(61)
            services.sweep()
        statuses = [attempt_of(i).status for i in instances]
        assert statuses == ["queued"] * 40 + ["waiting"] * 5  # more than a page, oldest first
        assert attempt_of(instances[40]).look_again_at == clock.now_datetime() + timedelta(
            seconds=60)
    finally:
        clock.use(None)


def test_a_release_of_two_keys_reads_every_key_to_its_end_in_order():
    with HOLDING:
        limited = [services.create("one-at-a-time", start=True) for _ in range(20)]
        rated = [services.create("one-a-minute", start=True) for _ in range(18)]
    assert [attempt_of(i).status for i in limited].count("waiting") == 19
    assert [attempt_of(i).status for i in rated].count("waiting") == 17
    Attempt.objects.filter(limit_key="L").update(limit_max=100)  # L has room for all now

    with HOLDING:
        handed = hand_out_waiting(["L", "R"])

    # More than a page of each key: none of L's skipped for R's newer ones.
    assert handed == [attempt_of(i).token for i in limited[1:]]
    assert [attempt_of(i).status for i in rated].count("waiting") == 17


def test_an_attempt_held_by_its_rate_says_so_though_its_limit_has_room():
    with HOLDING:
        instances = [services.create("both", start=True) for _ in range(2)]

    assert waiting_for(attempt_of(instances[1])) == (
        "waiting for a slot (kb-rate: 1 of 1 started in 60 s)")
