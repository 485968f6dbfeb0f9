"""A signed event becomes a signal: the instance moves on, a repeat changes nothing, an
early one is kept, and each answer tells the provider whether to send it again."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import SignalStatus, WorkflowEvent, WorkflowSignal
from tests.dbutil import instance_locked_elsewhere

from .conftest import footprint, reload, succeeded, waiting_order

pytestmark = pytest.mark.urls("tests.webhooks.urls")


def test_a_signed_event_moves_the_waiting_instance_on(provider):
    instance = waiting_order("pi_1")

    answer = provider.send("/hooks/payments/", succeeded("pi_1", event="evt_1"))

    assert answer.status == 200
    row = reload(instance)
    assert (row.current_step, row.state["payment"]) == ("ship", {"amount": 12, "charge": "ch_1"})
    signal = WorkflowSignal.objects.get()
    assert (signal.message_id, signal.status, signal.sender) == ("evt_1", SignalStatus.TAKEN,
                                                                  None)
    assert answer.body == {"webhook": "payments", "event": "evt_1", "deliveries": [{
        "workflow": "payment", "signal": "payment-confirmed", "message_id": "evt_1",
        "outcome": "taken", "signal_id": signal.pk, "instances": [str(instance.pk)]}]}
    event = WorkflowEvent.objects.get(instance=instance, type="signal")
    assert (event.data["message_id"], event.data["sender"]) == ("evt_1", None)


def test_the_same_event_again_is_acknowledged_and_changes_nothing(provider):
    instance = waiting_order("pi_1")
    provider.send("/hooks/payments/", succeeded("pi_1", event="evt_1"))
    before = footprint(instance)

    again = provider.send("/hooks/payments/", succeeded("pi_1", event="evt_1", amount=99))

    assert again.status == 200
    assert again.body["deliveries"][0]["outcome"] == "repeated"
    assert again.body["deliveries"][0]["instances"] == [str(instance.pk)]
    assert footprint(instance) == before


def test_an_event_before_the_step_waits_is_kept_answered_200_and_taken_later(provider):
    instance = services.create("payment", state={"intent": "pi_2", "payment": None},
                               start=True)

    answer = provider.send("/hooks/payments/", succeeded("pi_2", event="evt_2"))

    assert answer.status == 200
    assert answer.body["deliveries"][0]["outcome"] == "kept"
    assert answer.body["deliveries"][0]["instances"] == []
    services.next(instance)
    assert reload(instance).current_step == "ship"
    assert WorkflowSignal.objects.get().status == SignalStatus.TAKEN


def test_an_event_the_deliveries_function_ignores_answers_200_with_no_deliveries(provider):
    instance = waiting_order("pi_1")
    before = footprint(instance)

    answer = provider.send("/hooks/payments/", {"id": "evt_3", "type": "customer.created"})

    assert (answer.status, answer.body["deliveries"]) == (200, [])
    assert footprint(instance) == before


def test_an_event_for_a_finished_instance_is_acknowledged_with_200_not_retried(provider):
    instance = waiting_order("pi_1", reference="O-1")
    services.cancel(instance)

    answer = provider.send("/hooks/orders/", {"id": "evt_4", "order": {
        "reference": "O-1", "paid": {"amount": 3}}}, secret="orders-secret",
        header="X-Shop-Signature")

    assert answer.status == 200
    assert answer.body["deliveries"][0]["outcome"] == "not_waiting"
    assert not WorkflowSignal.objects.exists()


def test_an_unknown_reference_answers_404(provider):
    answer = provider.send("/hooks/orders/", {"id": "evt_5", "order": {
        "reference": "O-404", "paid": {"amount": 1}}},
                           secret="orders-secret", header="X-Shop-Signature")

    assert (answer.status, answer.body["code"]) == (404, "not_found")
    assert answer.body["deliveries"][0]["outcome"] == "refused"


def test_a_payload_that_breaks_the_signals_schema_answers_400_with_its_fields(provider):
    instance = waiting_order("pi_1", reference="O-2")
    before = footprint(instance)

    answer = provider.send("/hooks/orders/", {"id": "evt_6", "order": {
        "reference": "O-2", "paid": {"amount": 0}}}, secret="orders-secret",
        header="X-Shop-Signature")

    assert (answer.status, answer.body["code"]) == (400, "invalid_payload")
    assert "payload.amount" in answer.body["fields"]
    assert footprint(instance) == before


def test_an_event_the_deliveries_function_rejects_answers_its_400(provider):
    answer = provider.send("/hooks/orders/", {"id": "evt_7"}, secret="orders-secret",
                           header="X-Shop-Signature")

    assert (answer.status, answer.body["code"]) == (400, "invalid_event")
    assert "order.reference" in answer.body["detail"]


def test_each_delivery_of_an_event_is_its_own_record(provider):
    first, second = waiting_order("pi_a"), waiting_order("pi_b")

    answer = provider.send("/hooks/split/", {"id": "evt_8", "intents": ["pi_a", "pi_b"]},
                           secret="split-secret")

    assert answer.status == 200
    assert [d["outcome"] for d in answer.body["deliveries"]] == ["taken", "taken"]
    assert sorted(WorkflowSignal.objects.values_list("message_id", flat=True)) == [
        "evt_8:pi_a", "evt_8:pi_b"]
    assert [reload(i).current_step for i in (first, second)] == ["ship", "ship"]


def test_two_deliveries_with_one_message_id_answer_400_and_send_neither(provider):
    answer = provider.send("/hooks/split/", {"id": "evt_9", "intents": ["pi_a", "pi_a"]},
                           secret="split-secret")

    assert (answer.status, answer.body["code"]) == (400, "invalid_delivery")
    assert not WorkflowSignal.objects.exists()


def test_a_bug_in_the_deliveries_function_is_the_projects_500_and_changes_nothing(provider):
    instance = waiting_order("pi_1")
    before = footprint(instance)

    answer = provider.send("/hooks/broken/", succeeded("pi_1"), secret="broken-secret")

    assert answer.status == 500
    assert footprint(instance) == before


def test_a_secret_from_an_earlier_rotation_is_still_taken(provider, settings):
    settings.PAYMENTS_WEBHOOK_SECRET = ["whsec_new", "whsec_test"]
    instance = waiting_order("pi_1")

    old = provider.send("/hooks/payments/", succeeded("pi_1", event="evt_old"))

    assert old.status == 200 and reload(instance).current_step == "ship"


def test_get_answers_405_with_allow_post(provider):
    answer = provider.send("/hooks/payments/", b"", method="GET")

    assert (answer.status, answer.body["code"]) == (405, "method_not_allowed")
    assert answer.headers["Allow"] == "POST"


@pytest.mark.real_locks
def test_an_instance_locked_too_long_answers_503_and_the_providers_retry_hands_it_over(
        provider, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.2}
    instance = waiting_order("pi_1", reference="O-3")
    event = {"id": "evt_10", "order": {"reference": "O-3", "paid": {"amount": 4}}}

    with instance_locked_elsewhere(instance.pk):
        busy = provider.send("/hooks/orders/", event, secret="orders-secret",
                             header="X-Shop-Signature")
    again = provider.send("/hooks/orders/", event, secret="orders-secret",
                          header="X-Shop-Signature")

    assert (busy.status, busy.body["code"], busy.headers["Retry-After"]) == (503, "busy", "1")
    # The signal was recorded before the lock was asked for, and kept: the provider's retry
    # is a repeat of it, which hands it over now that the row is free.
    assert (again.status, again.body["deliveries"][0]["outcome"]) == (200, "repeated")
    assert WorkflowSignal.objects.get().status == SignalStatus.TAKEN
    assert reload(instance).current_step == "ship"
