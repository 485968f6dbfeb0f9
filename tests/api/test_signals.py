"""``POST /api/signals/`` and an instance's ``waiting`` (DESIGN.md §8): each answer, its
status and its body; what is recorded and what is not."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.models import SignalStatus, WorkflowInstance, WorkflowSignal
from tests import dbutil
from tests.factories import UserFactory

from .conftest import url, with_permission

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

SIGNALS = "/api/signals/"
PAID = {"amount": 12, "charge": "ch_1"}
SIGNAL_FIELDS = {"id", "workflow", "name", "message_id", "status", "received_at", "taken_at",
                 "repeated"}


def waiting_order(intent: str = "pi_1", **options: Any) -> WorkflowInstance:
    """A payment instance waiting for "payment-confirmed", correlated on ``intent``."""
    instance = services.create("payment", state={"intent": intent, "payment": None},
                               start=True, **options)
    return services.next(instance)


def send(client: Any, **body: Any) -> Any:
    return client.post(SIGNALS, {"workflow": "payment", "signal": "payment-confirmed",
                                 "payload": PAID, **body}, format="json")


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def sender(client_as: Any, changer: Any) -> Any:
    """A client of a user who may send every signal and see every instance."""
    return client_as(changer)


@pytest.fixture
def bot(db: None) -> Any:
    """A member of payment-bots: named in the signal's senders, with no permission at all."""
    user = UserFactory(username="bot")
    user.groups.add(Group.objects.get_or_create(name="payment-bots")[0])
    return user


# -- what an instance waits for -----------------------------------------------------------


def test_an_instance_waiting_for_a_signal_shows_its_name_correlation_and_timeout(api, owner):
    instance = waiting_order(owner=owner)

    waiting = api.get(url(instance)).json()["waiting"]

    assert (waiting["kind"], waiting["name"], waiting["correlation"]) == (
        "signal", "payment-confirmed", "pi_1")
    assert epoch(waiting["until"]) == pytest.approx(instance.snap.waiting.until)
    assert waiting["until"].endswith("Z")  # ISO 8601, as the instance's other times


def test_an_instance_waiting_for_a_timer_shows_when_it_falls_due(api, owner):
    instance = services.create("reminder", start=True, owner=owner)

    waiting = api.get(url(instance)).json()["waiting"]

    assert (waiting["kind"], waiting["name"], waiting["correlation"]) == ("timer", None, None)
    assert epoch(waiting["until"]) == pytest.approx(instance.snap.waiting.until)


def test_an_instance_waiting_for_a_task_shows_its_title_and_due_time(api, owner):
    instance = services.next(services.create("approval", start=True, owner=owner))

    waiting = api.get(url(instance)).json()["waiting"]

    assert (waiting["kind"], waiting["name"], waiting["correlation"]) == (
        "task", "Manager's decision", None)
    assert epoch(waiting["until"]) == pytest.approx(instance.snap.open_task.due_at)


def test_an_instance_that_waits_for_nothing_shows_null(api, owner):
    instance = services.create("payment", state={"intent": "pi_1", "payment": None},
                               start=True, owner=owner)

    assert api.get(url(instance)).json()["waiting"] is None


def test_an_instance_no_longer_waits_once_its_signal_arrived(api, owner):
    instance = waiting_order(owner=owner)
    services.signal("payment", "payment-confirmed", PAID, instance=instance)

    assert api.get(url(instance)).json()["waiting"] is None


def test_a_cancelled_instance_waits_for_nothing(api, owner):
    instance = services.cancel(waiting_order(owner=owner))

    assert api.get(url(instance)).json()["waiting"] is None


def test_the_list_shows_what_each_instance_waits_for(api, owner):
    waiting_order(owner=owner)
    services.create("reminder", start=True, owner=owner)

    kinds = {row["workflow"]: row["waiting"]["kind"]
             for row in api.get("/api/instances/").json()["results"]}

    assert kinds == {"payment": "signal", "reminder": "timer"}


# -- taken: 200 ----------------------------------------------------------------------------


def test_a_signal_to_the_instance_answers_200_with_the_instance_as_get_shows_it(sender):
    instance = waiting_order()

    response = send(sender, instance=str(instance.pk), message_id="evt_1")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"signal", "instances"}
    assert set(body["signal"]) == SIGNAL_FIELDS
    assert body["signal"] | {"id": None, "received_at": None, "taken_at": None} == {
        "id": None, "workflow": "payment", "name": "payment-confirmed", "message_id": "evt_1",
        "status": "taken", "received_at": None, "taken_at": None, "repeated": False}
    assert body["signal"]["taken_at"] is not None
    assert body["instances"] == [sender.get(url(instance)).json()]
    assert body["instances"][0]["current_step"] == "ship"
    assert body["instances"][0]["state"]["payment"] == PAID
    assert "Idempotent-Replayed" not in response


def test_a_signal_by_reference_reaches_the_instance_with_it(sender):
    instance = waiting_order(reference="O-1")

    response = send(sender, reference="O-1")

    assert response.status_code == 200
    assert [row["id"] for row in response.json()["instances"]] == [str(instance.pk)]
    assert reload(instance).current_step == "ship"


def test_a_signal_by_correlation_answers_every_instance_that_took_it(sender):
    first, second, other = waiting_order("pi_7"), waiting_order("pi_7"), waiting_order("pi_8")

    response = send(sender, correlation="pi_7")

    assert response.status_code == 200
    assert sorted(row["id"] for row in response.json()["instances"]) == sorted(
        [str(first.pk), str(second.pk)])
    assert reload(other).current_step == "await-payment"


def test_a_sender_who_may_not_see_the_instances_is_told_it_was_taken_without_them(
        client_as, bot):
    instance = waiting_order()

    response = send(client_as(bot), correlation="pi_1")

    assert response.status_code == 200
    assert response.json()["signal"]["status"] == "taken"
    assert response.json()["instances"] == []  # GET would answer 404: nothing of them shown
    assert reload(instance).current_step == "ship"


def test_a_sender_who_may_see_the_instances_gets_them(client_as, bot):
    bot.user_permissions.add(*with_permission("view_workflowinstance").user_permissions.all())
    bot = type(bot).objects.get(pk=bot.pk)
    instance = waiting_order()

    response = send(client_as(bot), correlation="pi_1")

    assert [row["id"] for row in response.json()["instances"]] == [str(instance.pk)]


# -- kept: 202 -----------------------------------------------------------------------------


def test_a_signal_nobody_waits_for_yet_is_kept_and_answers_202(sender):
    response = send(sender, correlation="pi_early", message_id="evt_early")

    assert response.status_code == 202
    body = response.json()
    assert body["instances"] == []
    assert (body["signal"]["status"], body["signal"]["taken_at"]) == ("kept", None)
    assert WorkflowSignal.objects.get(pk=body["signal"]["id"]).status == SignalStatus.KEPT


def test_a_kept_signal_is_taken_when_its_step_starts_waiting(sender):
    send(sender, correlation="pi_9")

    instance = waiting_order("pi_9")

    assert (instance.current_step, instance.state["payment"]) == ("ship", PAID)


def test_a_signal_to_an_instance_not_yet_at_its_step_is_kept_for_it(sender):
    instance = services.create("payment", state={"intent": "pi_1", "payment": None},
                               start=True)

    response = send(sender, instance=str(instance.pk))

    assert response.status_code == 202 and response.json()["instances"] == []
    assert services.next(instance).current_step == "ship"


# -- a repeat: the first outcome again -------------------------------------------------------


def test_the_same_message_id_again_answers_the_first_outcome_and_changes_nothing(sender):
    instance = waiting_order()
    first = send(sender, instance=str(instance.pk), message_id="evt_1")
    revision = reload(instance).revision

    again = send(sender, instance=str(instance.pk), message_id="evt_1",
                 payload={"amount": 99})

    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["signal"] == {**first.json()["signal"], "repeated": True}
    assert [row["id"] for row in again.json()["instances"]] == [str(instance.pk)]
    assert reload(instance).revision == revision
    assert reload(instance).state["payment"] == PAID
    assert WorkflowSignal.objects.count() == 1


def test_a_repeat_of_a_kept_signal_answers_202_again(sender):
    first = send(sender, correlation="pi_later", message_id="evt_k")

    again = send(sender, correlation="pi_later", message_id="evt_k")

    assert (first.status_code, again.status_code) == (202, 202)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["signal"]["id"] == first.json()["signal"]["id"]
    assert WorkflowSignal.objects.count() == 1


def test_a_repeat_of_a_refused_signal_answers_409_not_waiting_again(sender):
    first = send(sender, correlation="pi_gone", message_id="evt_r")
    WorkflowSignal.objects.filter(pk=first.json()["signal"]["id"]).update(
        status=SignalStatus.REFUSED)  # as when its instance was cancelled on the way

    again = send(sender, correlation="pi_gone", message_id="evt_r")

    assert (again.status_code, again.json()["code"]) == (409, "not_waiting")
    assert again["Idempotent-Replayed"] == "true"


# -- refusals: each answer, and nothing recorded ------------------------------------------


def refused(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == code and body["detail"]
    assert not WorkflowSignal.objects.exists()
    return body


def test_a_signal_without_an_address_answers_400_naming_the_addresses(sender):
    body = refused(send(sender), 400, "invalid")

    assert set(body["fields"]) == {"instance", "reference", "correlation"}


def test_a_signal_with_two_addresses_answers_400_naming_both(sender):
    instance = waiting_order()

    body = refused(send(sender, instance=str(instance.pk), correlation="pi_1"), 400, "invalid")

    assert set(body["fields"]) == {"instance", "correlation"}
    assert reload(instance).current_step == "await-payment"


def test_an_unknown_signal_answers_400_unknown_signal(sender):
    body = refused(send(sender, signal="refunded", correlation="pi_1"), 400, "unknown_signal")

    assert set(body["fields"]) == {"signal"}


def test_a_payload_that_breaks_the_schema_answers_400_naming_its_fields(sender):
    instance = waiting_order()

    body = refused(send(sender, instance=str(instance.pk), payload={"amount": "lots"}),
                   400, "invalid_payload")

    assert set(body["fields"]) == {"payload.amount"}
    assert reload(instance).current_step == "await-payment"


def test_a_payload_missing_a_required_field_names_that_field(sender):
    body = refused(send(sender, correlation="pi_1", payload={}), 400, "invalid_payload")

    assert list(body["fields"]) == ["payload.amount"]


def test_a_payload_of_the_wrong_type_names_the_payload(sender):
    body = refused(send(sender, correlation="pi_1", payload=[12]), 400, "invalid_payload")

    assert list(body["fields"]) == ["payload"]


@pytest.mark.parametrize(("body", "field"), [
    ({"workflow": "nope"}, "workflow"),
    ({"instance": "not-a-uuid"}, "instance"),
    ({"correlation": 12}, "correlation"),
    ({"correlation": "pi\x00"}, "correlation"),
    ({"correlation": "x" * 201}, "correlation"),
    ({"correlation": "pi_1", "message_id": "m" * 201}, "message_id"),
    ({"correlation": "pi_1", "payload": {"note": "a\x00b"}}, "payload.note"),
    ({"signal": ""}, "signal"),
])
def test_a_malformed_field_answers_400_naming_it(sender, body, field):
    found = refused(send(sender, **body), 400, "invalid")

    assert field in found["fields"]


def test_a_body_that_is_not_an_object_answers_400(sender):
    refused(sender.post(SIGNALS, [1, 2], format="json"), 400, "invalid")


def test_a_body_that_is_not_json_answers_400(sender):
    refused(sender.post(SIGNALS, "{", content_type="application/json"), 400, "parse_error")


def test_an_anonymous_signal_answers_401(client_as):
    refused(send(client_as(None), correlation="pi_1"), 401, "not_authenticated")


def test_a_user_who_may_not_send_answers_403(client_as, stranger):
    instance = waiting_order()

    refused(send(client_as(stranger), instance=str(instance.pk)), 403, "permission_denied")
    assert reload(instance).current_step == "await-payment"


def test_owning_the_instance_is_not_enough_to_send_it_a_signal(api, owner):
    instance = waiting_order(owner=owner)

    refused(send(api, instance=str(instance.pk)), 403, "permission_denied")


def test_an_unknown_instance_answers_404(sender):
    refused(send(sender, instance="00000000-0000-4000-8000-000000000000"), 404, "not_found")


def test_an_unknown_reference_answers_404(sender):
    refused(send(sender, reference="nope"), 404, "not_found")


def test_an_instance_of_another_workflow_answers_404(sender):
    other = services.create("reminder", start=True)

    refused(send(sender, instance=str(other.pk)), 404, "not_found")


def test_a_finished_instance_answers_409_not_waiting(sender):
    instance = services.cancel(waiting_order())

    refused(send(sender, instance=str(instance.pk)), 409, "not_waiting")


def test_a_payload_larger_than_the_state_limit_answers_413(sender, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "MAX_STATE_BYTES": 100}
    instance = waiting_order()

    refused(send(sender, instance=str(instance.pk),
                 payload={"amount": 1, "charge": "c" * 200}), 413, "state_too_large")


def test_only_post_is_answered(sender):
    assert sender.get(SIGNALS).json()["code"] == "method_not_allowed"


@pytest.mark.real_locks
@pytest.mark.django_db(transaction=True)
def test_an_instance_whose_row_stays_locked_answers_409_busy_and_keeps_the_signal(
        client_as, changer, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "LOCK_TIMEOUT": 0.5}
    instance = waiting_order("pi_busy")

    with dbutil.instance_locked_elsewhere(instance.pk):
        response = send(client_as(changer), instance=str(instance.pk), message_id="evt_b")
    again = send(client_as(changer), instance=str(instance.pk), message_id="evt_b")

    assert (response.status_code, response.json()["code"]) == (409, "busy")
    assert response["Retry-After"] == "1"
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert reload(instance).current_step == "ship"


def test_a_repeat_after_the_signal_finished_the_instance_answers_200_repeated(sender):
    instance = waiting_order("pi_done")
    first = send(sender, instance=str(instance.pk), message_id="evt_done")
    services.next(reload(instance))  # "ship": the order is completed
    assert reload(instance).status == "completed"

    again = send(sender, instance=str(instance.pk), message_id="evt_done")

    assert again.status_code == 200, again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["signal"] == {**first.json()["signal"], "repeated": True}
