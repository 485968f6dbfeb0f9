"""Signals in races, with real threads on a database with real row locks (PostgreSQL,
MariaDB): each race comes out one way, and the events say which.

Each round starts both sides at a barrier, so they meet at the row lock; every join has
a timeout, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.exceptions import Busy, WorkflowNotMoved
from django_workflows.models import (
    Deadline,
    SignalStatus,
    WorkflowEvent,
    WorkflowInstance,
    WorkflowSignal,
)
from tests import dbutil
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]

ROUNDS = 8
PAID = {"amount": 12}


def waiting_order(intent: str) -> WorkflowInstance:
    instance = services.create("payment", state={"intent": intent, "payment": None},
                               start=True)
    return services.next(instance)


def kinds(instance: WorkflowInstance) -> list[str]:
    return list(WorkflowEvent.objects.filter(instance=instance).order_by("sequence")
                .values_list("type", flat=True))


def test_a_signal_against_a_cancel_is_taken_before_it_or_refused_after_it():
    outcomes: Counter[str] = Counter()
    for round_ in range(ROUNDS):
        instance = waiting_order(f"pi_cancel_{round_}")

        signalled, cancelled = dbutil.at_once(
            lambda i=instance: services.signal("payment", "payment-confirmed", PAID,
                                               instance=i, message_id=f"evt_{i.pk}"),
            lambda i=instance: services.cancel(i))

        row = WorkflowInstance.objects.get(pk=instance.pk)
        assert not isinstance(cancelled, Exception), cancelled
        assert row.status == "cancelled"
        events = kinds(row)
        if isinstance(signalled, WorkflowNotMoved):
            assert signalled.code == "not_waiting"
            assert "signal" not in events  # cancelled first: the signal found it finished
            # Not recorded (it saw the cancel before it stored), or recorded as refused.
            assert list(WorkflowSignal.objects.filter(message_id=f"evt_{instance.pk}")
                        .values_list("status", flat=True)) in ([], [SignalStatus.REFUSED])
            outcomes["cancel first"] += 1
        else:
            assert [i.pk for i in signalled.taken_by] == [instance.pk]
            assert events.index("signal") < events.index("cancel")  # taken, then cancelled
            assert row.state["payment"] == PAID
            outcomes["signal first"] += 1
    print(dict(outcomes))
    assert sum(outcomes.values()) == ROUNDS


def test_two_deliveries_of_one_message_id_move_the_instance_once():
    for round_ in range(ROUNDS):
        instance = waiting_order(f"pi_twice_{round_}")

        first, second = dbutil.at_once(*[
            lambda i=instance, amount=amount: services.signal(
                "payment", "payment-confirmed", {"amount": amount}, instance=i,
                message_id=f"evt_{i.pk}") for amount in (1, 2)])

        assert not isinstance(first, Exception) and not isinstance(second, Exception)
        assert sorted([first.repeated, second.repeated]) == [False, True]
        row = WorkflowInstance.objects.get(pk=instance.pk)
        assert kinds(row).count("signal") == 1 and row.current_step == "ship"
        assert WorkflowSignal.objects.filter(message_id=f"evt_{instance.pk}").count() == 1


def test_a_signal_at_the_moment_its_timeout_fires_either_arrives_or_times_out():
    outcomes: Counter[str] = Counter()
    for round_ in range(ROUNDS):
        instance = waiting_order(f"pi_late_{round_}")
        deadline = Deadline.objects.get(instance=instance, kind="signal-timeout")

        signalled, fired = dbutil.at_once(
            lambda i=instance: services.signal("payment", "payment-confirmed", PAID,
                                               instance=i),
            lambda d=deadline: services.fire_deadline(d.pk))

        row = WorkflowInstance.objects.get(pk=instance.pk)
        events = kinds(row)
        assert not isinstance(signalled, Exception), signalled
        if fired:
            assert row.status == "failed" and "signal-timeout" in events
            assert "signal" not in events and signalled.kept  # kept for a retry's wait
            outcomes["timed out"] += 1
        else:
            assert row.current_step == "ship" and "signal-timeout" not in events
            assert [i.pk for i in signalled.taken_by] == [instance.pk]
            outcomes["arrived"] += 1
        assert not Deadline.objects.filter(instance=instance).exists()
    print(dict(outcomes))
    assert sum(outcomes.values()) == ROUNDS


def test_a_signal_to_a_busy_instance_is_kept_and_its_repeat_hands_it_over(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.5}
    instance = waiting_order("pi_busy")

    with dbutil.instance_locked_elsewhere(instance.pk), pytest.raises(Busy):
        services.signal("payment", "payment-confirmed", PAID, instance=instance,
                        message_id="evt_busy")
    assert WorkflowSignal.objects.get(message_id="evt_busy").status == SignalStatus.KEPT
    again = services.signal("payment", "payment-confirmed", PAID, instance=instance,
                            message_id="evt_busy")  # the provider sends it again

    assert again.repeated and [i.pk for i in again.taken_by] == [instance.pk]
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "ship"


def test_a_busy_instance_does_not_keep_a_signal_from_the_others_waiting_with_it(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.5}
    first, busy = waiting_order("pi_shared"), waiting_order("pi_shared")

    with dbutil.instance_locked_elsewhere(busy.pk):
        sent = services.signal("payment", "payment-confirmed", PAID, correlation="pi_shared")
    assert [i.pk for i in sent.taken_by] == [first.pk]
    assert WorkflowSignal.objects.get(pk=sent.signal.pk).taken_by == [str(first.pk)]


# -- issue 36: delivery judged before it is kept, under real locks -----------------------


def test_a_signal_by_correlation_meeting_an_instance_as_it_starts_waiting_is_taken(
        monkeypatch):
    """The instance's transaction has looked for kept signals and not yet committed its
    wait: the signal must wait for it and take it, not answer "kept" to a waiting order."""
    from django_workflows.services import unit

    looked, real_finder = threading.Event(), unit.kept_signal_finder

    def slow_finder(*args):
        find = real_finder(*args)

        def find_then_linger(*found):
            kept = find(*found)
            looked.set()
            time.sleep(1.0)  # the wait is not committed yet: the signal comes now
            return kept
        return find_then_linger

    monkeypatch.setattr(unit, "kept_signal_finder", slow_finder)
    order = services.create("payment", state={"intent": "pi_gap", "payment": None},
                            start=True)

    def signal_when_it_looked():
        assert looked.wait(30)
        return services.signal("payment", "payment-confirmed", PAID, correlation="pi_gap")

    moved, sent = dbutil.at_once(lambda: services.next(order), signal_when_it_looked)

    assert not isinstance(moved, Exception), moved
    assert not isinstance(sent, Exception), sent
    assert [i.pk for i in sent.taken_by] == [order.pk] and not sent.kept
    row = WorkflowInstance.objects.get(pk=order.pk)
    assert (row.current_step, row.state["payment"]) == ("ship", PAID)


@pytest.mark.usefixtures("signal_workflows")
def test_ten_deliveries_of_one_message_id_move_one_step():
    instance = services.create("two-pings", start=True)

    results = dbutil.at_once(*[
        lambda: services.signal("two-pings", "ping", "one", instance=instance,
                                message_id="m1") for _ in range(10)])

    assert not [r for r in results if isinstance(r, Exception)], results
    assert sum(1 for r in results if not r.repeated) == 1
    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.current_step, row.state) == ("second", {"first": "one", "second": None})
    assert kinds(row).count("signal") == 1


def test_a_repeat_from_another_sender_does_not_hand_a_kept_signal_over(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.5}
    bots = Group.objects.get_or_create(name="payment-bots")[0]
    first, other = UserFactory(username="bot-1"), UserFactory(username="bot-2")
    first.groups.add(bots)
    other.groups.add(bots)
    instance = waiting_order("pi_busy_repeat")
    with dbutil.instance_locked_elsewhere(instance.pk), pytest.raises(Busy):
        services.signal("payment", "payment-confirmed", PAID, instance=instance,
                        message_id="evt_kept", user=first)

    again = services.signal("payment", "payment-confirmed", {"amount": 99},
                            instance=instance, message_id="evt_kept", user=other)

    assert again.repeated and not again.taken_by
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "await-payment"
    services.sweep()  # the sweep hands it over, as its own sender sent it
    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.current_step, row.state["payment"]) == ("ship", PAID)
    assert row.events.get(type="signal").data["sender"] == str(first.pk)


@pytest.mark.usefixtures("signal_workflows")
@pytest.mark.parametrize(("fan_out", "takers"), [("all", 2), ("first", 1)])
def test_a_signal_kept_for_busy_instances_is_handed_by_the_sweep_by_its_fan_out(
        settings, fan_out, takers):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.5}
    workflow = f"broadcast-{fan_out}"
    listeners = [services.create(workflow, state={"topic": "t", "news": None}, start=True)
                 for _ in range(2)]
    with dbutil.instance_locked_elsewhere(listeners[0].pk), \
            dbutil.instance_locked_elsewhere(listeners[1].pk):
        sent = services.signal(workflow, "news", "hi", correlation="t")
    assert sent.kept and not sent.taken_by

    services.sweep()

    steps = [WorkflowInstance.objects.get(pk=i.pk).current_step for i in listeners]
    assert steps.count("done") == takers
    assert WorkflowSignal.objects.get().status == SignalStatus.TAKEN


def test_the_sweep_refuses_a_kept_signal_that_would_make_the_state_too_large(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.5,
                                 "MAX_STATE_BYTES": 400}
    instance = services.next(services.create("payment", start=True, state={
        "intent": "pi_big", "payment": None, "memo": "y" * 200}))
    with dbutil.instance_locked_elsewhere(instance.pk):
        sent = services.signal("payment", "payment-confirmed",
                               {"amount": 5, "charge": "x" * 200}, correlation="pi_big")
    assert sent.kept

    report = services.sweep()
    again = services.sweep()

    signal = WorkflowSignal.objects.get()
    assert signal.status == SignalStatus.REFUSED and "too large" in signal.detail
    assert (report.failed, again.failed) == (0, 0)
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "await-payment"
