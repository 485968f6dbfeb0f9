"""The example's charge is held to its merchant's limit: the fake provider refuses a sixth
concurrent charge of a merchant, and ``concurrency=Limit(key=<merchant>, max=5)`` on the
charge makes sure it never gets one (docs/limits.md)."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from django_workflows import Limit, registry, services
from django_workflows.models import Attempt, WorkflowInstance
from django_workflows.runners.worker import run_attempt
from django_workflows.services.slots import waiting_for
from example_project.shop import fulfilment, payments
from example_project.shop.models import Charge, ChargeRequest

from .factories import order_state, stock_for_order

ORDERS = 8  # of one merchant: three more than its slots
WORKERS = 8  # as many as orders: only the limit keeps the sixth charge back


class Workers:
    """The runner of a pool of worker threads, as a ``qcluster``'s: every token it is given
    goes to a queue, and the first free worker runs it."""

    tokens: queue.Queue[str] = queue.Queue()

    def enqueue(self, tokens: Sequence[str]) -> None:
        for token in tokens:
            Workers.tokens.put(token)


def workers_runner():
    return override_settings(DJANGO_WORKFLOWS={
        **settings.DJANGO_WORKFLOWS, "RUNNER": "tests.example.test_merchant_limit.Workers"})


@contextmanager
def working(failures: list[BaseException]) -> Iterator[None]:
    """``WORKERS`` threads run the queued tokens until the block ends (what they raise
    goes to ``failures``)."""
    stop = threading.Event()

    def worker() -> None:
        try:
            while not stop.is_set():
                try:
                    token = Workers.tokens.get(timeout=0.05)
                except queue.Empty:
                    continue
                run_attempt(token, heartbeat_thread=False)
        except BaseException as error:  # the test fails with it
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(WORKERS)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)


def wait_until(done: Callable[[], bool], failures: list[BaseException], *,
               sweep: bool = False, seconds: float = 60) -> None:
    """Until ``done()``, or a worker failed, or ``seconds`` passed; sweeping (as a
    qcluster's sweeper does) every quarter of a second with ``sweep``."""
    deadline = time.monotonic() + seconds
    swept = 0.0
    while time.monotonic() < deadline and not failures:
        if sweep and time.monotonic() - swept > 0.25:
            services.sweep()
            swept = time.monotonic()
        if done():
            return
        time.sleep(0.01)


def place_orders(merchant: str) -> list[WorkflowInstance]:
    stock_for_order(on_hand=100)
    Workers.tokens = queue.Queue()
    return [services.create("order-fulfilment", start=True, state=order_state(
        order_number=f"A-{n}", merchant=merchant)) for n in range(1, ORDERS + 1)]


def charges_of(orders: list[WorkflowInstance]) -> list[Attempt]:
    """Each order's charge attempt, in the orders' order."""
    by_order = {a.instance_id: a for a in Attempt.objects.filter(
        instance__in=orders, target="charge-card").order_by("enqueued_at")}
    return [by_order[order.pk] for order in orders]


def stuck(orders) -> str:
    """What the orders that did not complete were doing, and their attempts."""
    lines = []
    for order in orders:
        if order.status == "completed":
            continue
        lines.append(f"{order.pk} {order.status} at {order.current_step}: " + ", ".join(
            f"{op['id']} {op['status']}" for op in order.operations))
        lines += [f"  {a.kind} {a.target} #{a.number} {a.status} {a.limit_key}"
                  for a in Attempt.objects.filter(instance=order).order_by("enqueued_at")]
    lines += [f"bank {b.reference} {b.status}: " + ", ".join(
        f"{op['id']} {op['status']}" for op in b.operations)
        for b in WorkflowInstance.objects.filter(workflow="fake-bank").exclude(
            status="completed")]
    return "\n".join(lines)


def test_the_charge_is_declared_with_the_providers_limit_per_merchant():
    assert fulfilment.charge.concurrency == Limit(key=fulfilment.merchant_charges, max=5)
    assert payments.CONCURRENT_CHARGES == 5


@pytest.mark.django_db
def test_the_provider_refuses_a_sixth_concurrent_charge_of_a_merchant():
    now = timezone.now()
    for _ in range(5):  # five requests of merchant 7 in flight
        ChargeRequest.objects.create(merchant="7", started_at=now)
    # One whose caller died a minute ago counts no more.
    ChargeRequest.objects.create(merchant="7", started_at=now - timedelta(seconds=60))

    def charge(merchant: str, key: str) -> Charge:
        return payments.create_charge(amount_cents=500, currency="EUR",
                                      payment_method="pm_card_ok", reference=key,
                                      idempotency_key=key, merchant=merchant)

    with pytest.raises(payments.TooManyConcurrentCharges,
                       match="Too many concurrent charges for merchant 7"):
        charge("7", "order-6")
    assert not Charge.objects.exists()  # nothing was charged
    assert payments.busiest("7") == 6  # it saw a sixth: and refused it

    assert charge("8", "order-of-8").status == Charge.PENDING  # another merchant's slots
    answered = ChargeRequest.objects.filter(merchant="7", finished_at=None).earliest("pk")
    ChargeRequest.objects.filter(pk=answered.pk).update(finished_at=timezone.now())
    assert charge("7", "order-6").status == Charge.PENDING


@pytest.mark.django_db(transaction=True)
def test_a_merchants_sixth_order_waits_for_a_slot_and_every_order_is_charged_in_the_end():
    failures: list[BaseException] = []
    # Each charge request takes 0.3 s at the provider: the five overlap.
    with workers_runner(), override_settings(SHOP_PAYMENTS={"CHARGE_LATENCY": 0.3}):
        orders = place_orders(merchant="7")

        # No worker has started yet: five charges are handed out, the rest wait in the
        # database (not in the queue), oldest first.
        charges = charges_of(orders)
        assert [a.status for a in charges] == ["queued"] * 5 + ["waiting"] * 3
        assert {a.limit_key for a in charges} == {"merchant-7"}
        assert Workers.tokens.qsize() == 5
        assert waiting_for(charges[5]) == "waiting for a slot (merchant-7: 5 of 5 running)"

        seen: list[Counter[str]] = []

        def completed() -> bool:
            seen.append(Counter(Attempt.objects.filter(
                instance__in=orders, target="charge-card").values_list("status", flat=True)))
            return set(WorkflowInstance.objects.filter(pk__in=[o.pk for o in orders])
                       .values_list("status", flat=True)) == {"completed"}

        with working(failures):
            # The sweep hands an order the webhook that came while it was starting to
            # wait for it (docs/waiting.md).
            wait_until(completed, failures, sweep=True)

    assert failures == []
    done = WorkflowInstance.objects.filter(pk__in=[o.pk for o in orders])
    assert sorted(o.status for o in done) == ["completed"] * ORDERS, stuck(done)
    # Never more than five charges queued or running at once; the others waited.
    assert max(s["queued"] + s["running"] for s in seen) <= 5
    assert any(s["waiting"] for s in seen)
    # Each order was charged once, at its first attempt: the provider refused none...
    for order in done:
        charge = next(op for op in order.operations if op["id"] == "charge-card")
        assert (charge["status"], charge["attempt"]) == ("succeeded", 1)
    assert Charge.objects.filter(status=Charge.SUCCEEDED).count() == ORDERS
    assert not ChargeRequest.objects.filter(refused=True).exists()
    # ...and never saw more than five of merchant 7 at once (but did see them overlap).
    assert 1 < payments.busiest("7") <= 5


@pytest.fixture
def charge_without_its_limit():
    """The order fulfilment as it would be if its charge had no ``Limit``."""
    original = registry.get("order-fulfilment")
    origin = registry.origin_of("order-fulfilment")
    unlimited = dataclasses.replace(fulfilment.charge, concurrency=None)
    variant = dataclasses.replace(original, steps=[
        dataclasses.replace(step, operations=[unlimited]) if step.id == "payment" else step
        for step in original.steps])
    registry.unregister(original.id)
    registry.register(variant, origin=__name__)
    yield
    registry.unregister(original.id)
    registry.register(original, origin=origin)


@pytest.mark.django_db(transaction=True)
def test_without_the_limit_the_provider_refuses_charges(charge_without_its_limit):
    failures: list[BaseException] = []
    with workers_runner(), override_settings(SHOP_PAYMENTS={"CHARGE_LATENCY": 0.5}):
        orders = place_orders(merchant="7")
        assert [a.status for a in charges_of(orders)] == ["queued"] * ORDERS  # none waits

        with working(failures):
            wait_until(lambda: ChargeRequest.objects.count() >= ORDERS, failures)
            wait_until(lambda: not ChargeRequest.objects.filter(finished_at=None).exists(),
                       failures)

    assert failures == []
    # The eight workers sent the eight charges at once: the provider refused what came
    # over five, and those orders wait to try again.
    assert payments.busiest("7") > 5
    refused = ChargeRequest.objects.filter(refused=True).count()
    assert refused >= 1
    errors = [op["error"]["message"] for order in WorkflowInstance.objects.filter(
        pk__in=[o.pk for o in orders]) for op in order.operations
        if op["id"] == "charge-card" and op.get("error")]
    assert len(errors) == refused
    assert all(e.startswith("Too many concurrent charges for merchant 7") for e in errors)
