"""``services.signal``: a signal addressed by instance, reference or correlation, kept
when it comes early, idempotent by message id, sent only by those allowed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from django_workflows import services
from django_workflows.exceptions import (
    InstanceNotFound,
    InvalidPayload,
    NotAllowed,
    UnknownSignal,
    WorkflowNotMoved,
)
from django_workflows.models import SignalStatus, WorkflowEvent, WorkflowInstance, WorkflowSignal
from django_workflows.testing import WorkflowTester
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PAID = {"amount": 12, "charge": "ch_1"}


def waiting_order(intent: str = "pi_1", **options) -> WorkflowInstance:
    instance = services.create("payment", state={"intent": intent, "payment": None},
                               start=True, **options)
    return services.next(instance)


def reload(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def events(instance, kind: str) -> list[WorkflowEvent]:
    return list(WorkflowEvent.objects.filter(instance=instance, type=kind).order_by("sequence"))


def test_a_waiting_instance_shows_what_it_waits_for_in_its_columns():
    instance = waiting_order()

    assert (instance.awaiting, instance.correlation) == ("payment-confirmed", "pi_1")
    assert instance.snap.waiting.until is not None  # its timeout


def test_a_signal_to_the_instance_moves_it_on_with_its_payload():
    instance = waiting_order()

    sent = services.signal("payment", "payment-confirmed", PAID, instance=instance,
                           message_id="evt_1")

    row = reload(instance)
    assert [i.pk for i in sent.taken_by] == [instance.pk] and not sent.kept
    assert (row.current_step, row.state["payment"]) == ("ship", PAID)
    assert (row.awaiting, row.correlation) == (None, None)
    assert sent.signal.status == SignalStatus.TAKEN and sent.signal.taken_by == [str(row.pk)]
    assert events(row, "signal")[0].data["message_id"] == "evt_1"
    assert not row.deadlines.exists()  # its timeout went with the wait


def test_a_signal_by_reference_reaches_that_instance():
    instance = waiting_order(reference="O-1")

    services.signal("payment", "payment-confirmed", PAID, reference="O-1")

    assert reload(instance).current_step == "ship"


def test_a_signal_by_correlation_reaches_every_instance_waiting_with_that_value():
    first, second, other = waiting_order("pi_1"), waiting_order("pi_1"), waiting_order("pi_2")

    sent = services.signal("payment", "payment-confirmed", PAID, correlation="pi_1")

    assert sorted(i.pk for i in sent.taken_by) == sorted([first.pk, second.pk])
    assert [reload(i).current_step for i in (first, second, other)] == [
        "ship", "ship", "await-payment"]
    assert sorted(sent.signal.taken_by) == sorted([str(first.pk), str(second.pk)])


def test_a_signal_that_comes_early_is_kept_and_taken_when_the_step_waits():
    instance = services.create("payment", state={"intent": "pi_9", "payment": None},
                               start=True)

    sent = services.signal("payment", "payment-confirmed", PAID, correlation="pi_9")
    assert sent.kept and sent.taken_by == []
    services.next(instance)

    row = reload(instance)
    assert (row.current_step, row.state["payment"]) == ("ship", PAID)
    assert events(row, "signal")[0].data["kept"] is True
    assert WorkflowSignal.objects.get(pk=sent.signal.pk).status == SignalStatus.TAKEN


def test_a_kept_signal_is_taken_by_one_instance_only():
    services.signal("payment", "payment-confirmed", PAID, correlation="pi_3")

    first, second = waiting_order("pi_3"), waiting_order("pi_3")

    assert [reload(i).current_step for i in (first, second)] == ["ship", "await-payment"]


def test_the_same_message_id_again_is_acknowledged_and_changes_nothing():
    instance = waiting_order()
    services.signal("payment", "payment-confirmed", PAID, instance=instance,
                    message_id="evt_1")
    revision = reload(instance).revision

    again = services.signal("payment", "payment-confirmed", {"amount": 99},
                            instance=instance, message_id="evt_1")

    assert again.repeated and [i.pk for i in again.taken_by] == [instance.pk]
    assert reload(instance).revision == revision and reload(instance).state["payment"] == PAID
    assert WorkflowSignal.objects.count() == 1


def test_a_payload_that_breaks_the_schema_is_refused_and_nothing_is_recorded():
    instance = waiting_order()

    with pytest.raises(InvalidPayload) as refused:
        services.signal("payment", "payment-confirmed", {"amount": "lots"},
                        instance=instance)

    assert [problem.field for problem in refused.value.field_errors] == ["amount"]
    assert not WorkflowSignal.objects.exists()
    assert reload(instance).current_step == "await-payment"


def test_unknown_signals_instances_and_references_are_refused():
    instance = waiting_order()

    with pytest.raises(UnknownSignal):
        services.signal("payment", "refunded", {}, instance=instance)
    with pytest.raises(InstanceNotFound):
        services.signal("payment", "payment-confirmed", PAID, reference="nope")
    with pytest.raises(ValueError, match="exactly one"):
        services.signal("payment", "payment-confirmed", PAID, instance=instance,
                        correlation="pi_1")
    assert not WorkflowSignal.objects.exists()


def test_a_signal_for_a_finished_instance_is_not_waited_for():
    instance = waiting_order()
    services.cancel(instance)

    with pytest.raises(WorkflowNotMoved) as refused:
        services.signal("payment", "payment-confirmed", PAID, instance=instance)

    assert refused.value.code == "not_waiting"
    assert not WorkflowSignal.objects.exists()


def test_only_users_who_act_on_every_instance_and_the_named_senders_may_send():
    instance = waiting_order(owner=UserFactory(username="owner"))
    bot = UserFactory(username="bot")
    bot.groups.add(Group.objects.create(name="payment-bots"))

    with pytest.raises(NotAllowed):  # the owner may not say the bank paid
        services.signal("payment", "payment-confirmed", PAID, instance=instance,
                        user=instance.owner)
    sent = services.signal("payment", "payment-confirmed", PAID, instance=instance, user=bot)

    assert sent.signal.sender_id == bot.pk
    assert events(instance, "signal")[0].data["sender"] == str(bot.pk)
    assert events(instance, "signal")[0].actor_id == bot.pk


def test_next_is_refused_while_the_step_waits():
    instance = waiting_order()

    with pytest.raises(WorkflowNotMoved) as refused:
        services.next(instance)

    assert refused.value.code == "signal_awaited"


def test_the_sweep_hands_a_kept_signal_to_an_instance_that_waits_for_it_now():
    instance = waiting_order("pi_7")
    kept = WorkflowSignal.objects.create(workflow="payment", name="payment-confirmed",
                                         correlation="pi_7", payload=PAID)

    report = services.sweep()

    assert report.signals == 1 and reload(instance).current_step == "ship"
    assert WorkflowSignal.objects.get(pk=kept.pk).status == SignalStatus.TAKEN


@pytest.mark.parametrize("address", ["instance", "correlation"])
def test_the_sender_is_told_the_signal_as_it_was_stored_and_a_repeat_says_the_same(address):
    instance = waiting_order("pi_3")
    names = {"instance": {"instance": instance}, "correlation": {"correlation": "pi_3"}}
    sent = services.signal("payment", "payment-confirmed", PAID, message_id="evt_3",
                           **names[address])
    repeat = services.signal("payment", "payment-confirmed", PAID, message_id="evt_3",
                             **names[address])

    stored = WorkflowSignal.objects.get(pk=sent.signal.pk)
    told = [(s.signal.status, s.signal.taken_by, s.signal.taken_at) for s in (sent, repeat)]
    assert told == [(SignalStatus.TAKEN, [str(instance.pk)], stored.taken_at)] * 2
    assert stored.taken_at == reload(instance).updated_at


@pytest.mark.parametrize("address", ["instance", "reference", "correlation"])
def test_the_sweep_finds_a_waiting_instance_s_kept_signal_behind_many_no_one_waits_for(
        address):
    # The usual kept signal came before its step: its step's entry takes it. Those must not
    # hide, however many and however old, one an instance waits for now.
    WorkflowSignal.objects.bulk_create(
        WorkflowSignal(workflow="payment", name="payment-confirmed", correlation=f"pi_{n}",
                       received_at=timezone.now() - timedelta(hours=1))
        for n in range(1000, 1150))
    instance = waiting_order("pi_7", reference="order-7")
    names = {"instance": {"instance": instance}, "reference": {"reference": "order-7"},
             "correlation": {"correlation": "pi_7"}}[address]
    kept = WorkflowSignal.objects.create(workflow="payment", name="payment-confirmed",
                                         payload=PAID, **names)

    report = services.sweep()

    assert report.signals == 1 and reload(instance).current_step == "ship"
    assert WorkflowSignal.objects.get(pk=kept.pk).status == SignalStatus.TAKEN
    assert WorkflowSignal.objects.filter(status=SignalStatus.KEPT).count() == 150


def test_kept_signals_expire_after_their_retention(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SIGNAL_RETENTION": 60}
    sent = services.signal("payment", "payment-confirmed", PAID, correlation="pi_0")
    received = sent.signal.received_at

    services.sweep(now=received + timedelta(seconds=59))
    assert WorkflowSignal.objects.get(pk=sent.signal.pk).status == SignalStatus.KEPT
    services.sweep(now=received + timedelta(seconds=61))

    assert WorkflowSignal.objects.get(pk=sent.signal.pk).status == SignalStatus.EXPIRED


def test_the_signals_timeout_fails_the_step_when_nothing_came():
    with WorkflowTester() as wf:
        instance = wf.next(wf.create("payment", state={"intent": "pi_1", "payment": None},
                                     start=True))
        wf.advance(timedelta(hours=1).total_seconds())

    row = reload(instance)
    assert row.status == "failed" and "payment-confirmed" in row.errors[0]
    assert row.awaiting is None


def test_a_timer_moves_the_step_on_when_the_fake_clock_passes_it():
    with WorkflowTester() as wf:
        instance = wf.create("reminder", start=True)
        wf.advance(3 * 24 * 3600 - 1)
        assert reload(instance).current_step == "wait"
        wf.advance(1)

    assert reload(instance).current_step == "remind"


def test_a_payload_a_database_cannot_store_is_refused_naming_its_field():
    instance = waiting_order()

    with pytest.raises(InvalidPayload) as refused:
        services.signal("payment", "payment-confirmed", {"amount": 1, "charge": "nul \x00"},
                        instance=instance)

    assert [problem.field for problem in refused.value.field_errors] == ["charge"]
    assert not WorkflowSignal.objects.exists()
