"""Signal delivery judged before it is kept (issue 36, part 2): a sender is judged against the
workflow and under each instance's lock, only what was accepted is recorded, a kept signal
is judged again by the instance that takes it, one delivery moves one step, a repeat from
another sender takes nothing over, the state's schema checks the payload, and the fan-out
is declared on the signal."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.exceptions import InvalidPayload, NotAllowed
from django_workflows.models import SignalStatus, WorkflowInstance, WorkflowSignal
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("signal_workflows")]

PAID = {"amount": 12}


@pytest.fixture
def bot():
    """A member of payment-bots: named in the signals' senders, with no permission."""
    user = UserFactory(username="bot")
    user.groups.add(Group.objects.get_or_create(name="payment-bots")[0])
    return user


def reload(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def tenant_order(tenant: str, intent: str, *, waiting: bool = True) -> WorkflowInstance:
    instance = services.create("tenant-payment", state={"tenant": tenant, "intent": intent,
                                                        "payment": None}, start=True)
    return services.next(instance) if waiting else instance


# -- judged under the lock, recorded only when accepted ---------------------------------


def test_a_sender_the_instance_refuses_gets_nothing_in_now_or_later(bot):
    order = tenant_order("locked", "pi_1")

    with pytest.raises(NotAllowed):
        services.signal("tenant-payment", "paid", PAID, instance=order, user=bot)
    services.sweep()

    assert not WorkflowSignal.objects.exists()  # nothing kept for a sweep to hand over
    row = reload(order)
    assert (row.current_step, row.state["payment"]) == ("await-payment", None)


def test_a_sender_the_instance_refuses_is_refused_before_the_instance_waits(bot):
    order = tenant_order("locked", "pi_1", waiting=False)

    with pytest.raises(NotAllowed):
        services.signal("tenant-payment", "paid", PAID, instance=order, user=bot)
    services.next(order)
    services.sweep()

    assert not WorkflowSignal.objects.exists()
    assert reload(order).state["payment"] is None


def test_a_sender_refused_by_every_waiting_instance_is_refused_by_correlation(bot):
    order = tenant_order("locked", "pi_shared")

    with pytest.raises(NotAllowed):
        services.signal("tenant-payment", "paid", PAID, correlation="pi_shared", user=bot)

    assert not WorkflowSignal.objects.exists()
    assert reload(order).current_step == "await-payment"


def test_by_correlation_only_the_instances_that_accept_the_sender_take_it(bot):
    locked, open_ = tenant_order("locked", "pi_shared"), tenant_order("acme", "pi_shared")

    sent = services.signal("tenant-payment", "paid", PAID, correlation="pi_shared", user=bot)

    assert [i.pk for i in sent.taken_by] == [open_.pk]
    assert reload(locked).current_step == "await-payment"
    assert WorkflowSignal.objects.get().taken_by == [str(open_.pk)]


def test_a_kept_signal_is_judged_again_by_the_instance_that_takes_it(bot):
    sent = services.signal("tenant-payment", "paid", PAID, correlation="pi_early", user=bot)
    assert sent.kept and sent.signal.sender_id == bot.pk

    order = tenant_order("locked", "pi_early")  # starts waiting: would take it
    services.sweep()

    row = reload(order)
    assert (row.current_step, row.state["payment"]) == ("await-payment", None)
    signal = WorkflowSignal.objects.get()
    assert signal.status == SignalStatus.REFUSED and signal.taken_by == []


def test_a_kept_signal_whose_sender_lost_the_right_to_send_is_not_taken(bot):
    services.signal("tenant-payment", "paid", PAID, correlation="pi_early", user=bot)
    bot.groups.clear()

    order = tenant_order("acme", "pi_early")

    assert reload(order).state["payment"] is None
    assert WorkflowSignal.objects.get().status == SignalStatus.REFUSED


def test_a_kept_signal_whose_sender_was_deleted_is_not_taken_as_trusted_code(bot):
    services.signal("tenant-payment", "paid", PAID, correlation="pi_early", user=bot)
    bot.delete()  # the row's sender is set to NULL: it must not read as code's own

    order = tenant_order("acme", "pi_early")

    assert reload(order).state["payment"] is None
    assert WorkflowSignal.objects.get().status == SignalStatus.REFUSED


def test_a_kept_signal_from_an_accepted_sender_is_taken_with_its_sender(bot):
    services.signal("tenant-payment", "paid", PAID, correlation="pi_early", user=bot,
                    message_id="evt_early")

    order = tenant_order("acme", "pi_early")

    row = reload(order)
    assert (row.current_step, row.state["payment"]) == ("ship", PAID)
    event = row.events.get(type="signal")
    assert (event.data["sender"], event.data["kept"]) == (str(bot.pk), True)


# -- one delivery, one step -------------------------------------------------------------


def test_one_signal_moves_one_step_when_the_next_step_waits_for_it_too():
    instance = services.create("two-pings", start=True)

    services.signal("two-pings", "ping", "one", instance=instance, message_id="m1")

    row = reload(instance)
    assert (row.current_step, row.state) == ("second", {"first": "one", "second": None})
    services.signal("two-pings", "ping", "two", instance=instance, message_id="m2")
    assert reload(instance).status == "completed"


def test_the_same_message_id_again_does_not_move_the_next_step_that_waits_for_it():
    instance = services.create("two-pings", start=True)

    services.signal("two-pings", "ping", "one", instance=instance, message_id="m1")
    again = services.signal("two-pings", "ping", "one", instance=instance, message_id="m1")

    assert again.repeated
    assert reload(instance).current_step == "second"


# -- repeats ----------------------------------------------------------------------------


def test_a_repeat_after_the_signal_finished_the_instance_answers_repeated():
    instance = services.create("two-pings", start=True)
    services.signal("two-pings", "ping", "one", instance=instance, message_id="m1")
    first = services.signal("two-pings", "ping", "two", instance=instance, message_id="m2")
    assert reload(instance).status == "completed"

    again = services.signal("two-pings", "ping", "two", instance=instance, message_id="m2")

    assert again.repeated and [i.pk for i in again.taken_by] == [instance.pk]
    assert again.signal.pk == first.signal.pk


def test_a_repeat_from_another_sender_is_acknowledged_and_takes_nothing_over(bot):
    other = UserFactory(username="other-bot")
    other.groups.add(Group.objects.get(name="payment-bots"))
    sent = services.signal("tenant-payment", "paid", PAID, correlation="pi_later",
                           message_id="evt_1", user=bot)

    again = services.signal("tenant-payment", "paid", {"amount": 99}, correlation="pi_later",
                            message_id="evt_1", user=other)
    order = tenant_order("acme", "pi_later")

    assert again.repeated and not again.taken_by
    signal = WorkflowSignal.objects.get()
    assert (signal.pk, signal.sender_id, signal.payload) == (sent.signal.pk, bot.pk, PAID)
    assert reload(order).state["payment"] == PAID  # the first one's payload, not the repeat's


# -- the payload against the state's schema ---------------------------------------------


def test_a_payload_that_breaks_the_state_schema_is_refused_and_nothing_recorded():
    instance = services.create("capped", start=True)

    with pytest.raises(InvalidPayload) as refused:
        services.signal("capped", "paid", {"amount": 500}, instance=instance)

    assert "payment.amount" in {error.field for error in refused.value.field_errors}
    assert not WorkflowSignal.objects.exists()
    assert reload(instance).current_step == "await"


def test_a_kept_payload_that_breaks_the_state_schema_is_refused_when_taken():
    services.signal("capped", "paid", {"amount": 500}, correlation="capped")

    instance = services.create("capped", start=True)

    assert reload(instance).current_step == "await"
    assert WorkflowSignal.objects.get().status == SignalStatus.REFUSED


# -- fan-out, the same now and kept -----------------------------------------------------


def listening(workflow: str, topic: str) -> WorkflowInstance:
    return services.create(workflow, state={"topic": topic, "news": None}, start=True)


def test_fan_out_all_reaches_every_waiting_instance():
    first, second = listening("broadcast-all", "t"), listening("broadcast-all", "t")

    sent = services.signal("broadcast-all", "news", "hi", correlation="t")

    assert {i.pk for i in sent.taken_by} == {first.pk, second.pk}


def test_fan_out_first_reaches_one_waiting_instance_the_oldest():
    first, second = listening("broadcast-first", "t"), listening("broadcast-first", "t")

    sent = services.signal("broadcast-first", "news", "hi", correlation="t")

    assert [i.pk for i in sent.taken_by] == [first.pk]
    assert reload(second).current_step == "listen"


@pytest.mark.parametrize("workflow", ["broadcast-all", "broadcast-first"])
def test_a_kept_signal_is_taken_once_by_the_first_instance_that_waits(workflow):
    services.signal(workflow, "news", "hi", correlation="t")

    first, second = listening(workflow, "t"), listening(workflow, "t")
    services.sweep()

    assert reload(first).current_step == "done" and reload(second).current_step == "listen"


# -- a signal kept for a step not yet reached -------------------------------------------


def test_create_with_start_takes_a_signal_kept_for_its_first_step():
    services.signal("starts-waiting", "paid", PAID, correlation="pi_9")

    instance = services.create("starts-waiting", state={"intent": "pi_9", "payment": None},
                               start=True)

    assert (instance.current_step, instance.state["payment"]) == ("done", PAID)
    assert WorkflowSignal.objects.get().status == SignalStatus.TAKEN


def test_a_signal_addressed_to_an_instance_not_yet_waiting_is_kept_for_it(bot):
    order = tenant_order("acme", "pi_2", waiting=False)

    sent = services.signal("tenant-payment", "paid", PAID, instance=order, user=bot)
    assert sent.kept

    services.next(order)
    assert reload(order).state["payment"] == PAID


# -- held while paused, never lost ------------------------------------------------------


def test_held_signals_that_no_step_awaits_on_resume_are_kept_for_the_step_that_will():
    instance = services.create("ping-later", start=True)
    services.pause(instance)

    first = services.signal("ping-later", "ping", "one", instance=instance, message_id="m1")
    second = services.signal("ping-later", "ping", "two", instance=instance, message_id="m2")
    assert [s.signal.status for s in (first, second)] == [SignalStatus.HELD] * 2

    services.resume(instance)  # "one" moves "first" on; "middle" waits for nothing
    assert reload(instance).current_step == "middle"
    assert WorkflowSignal.objects.get(message_id="m2").status == SignalStatus.KEPT

    services.next(instance)  # "last" waits for "ping": the kept one is taken
    row = reload(instance)
    assert (row.current_step, row.state) == ("end", {"first": "one", "last": "two"})


def test_a_held_signal_of_an_instance_cancelled_while_paused_is_kept_again():
    instance = services.create("ping-later", start=True)
    services.pause(instance)
    services.signal("ping-later", "ping", "one", instance=instance, message_id="m1")

    services.cancel(instance)

    signal = WorkflowSignal.objects.get(message_id="m1")
    assert (signal.status, signal.taken_by) == (SignalStatus.KEPT, [])


# -- a kept signal that would never fit ---------------------------------------------------


def test_a_kept_signal_too_large_for_the_state_is_refused_and_the_step_still_waits(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "MAX_STATE_BYTES": 400}
    payload = {"amount": 5, "note": "x" * 200}
    services.signal("tenant-payment", "paid", payload, correlation="pi_big")
    order = services.create("tenant-payment", start=True, state={
        "tenant": "acme", "intent": "pi_big", "payment": None, "memo": "y" * 200})

    services.next(order)  # enters the wait: the kept signal would make the state too large

    row = reload(order)
    assert (row.current_step, row.state["payment"]) == ("await-payment", None)
    signal = WorkflowSignal.objects.get()
    assert signal.status == SignalStatus.REFUSED and "too large" in signal.detail
