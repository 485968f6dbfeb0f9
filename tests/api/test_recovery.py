"""The API's recovery actions (pause, resume, rewind), their refusals, and what an instance
says of a pause and of its last rollback (``paused``, ``rolled_back``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_workflows import Step, Transition, Workflow, registry
from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def workflows() -> Iterator[None]:
    """``api-order``: a completed order does not reopen; its payment is undone by a refund
    whose id the compensation returns."""
    order = Workflow(id="api-order", reopen_completed=False, steps=[
        Step("pay", compensate=lambda ctx: {"refund": "re_1"}), Step("ship")],
        transitions=[Transition("pay", "ship")])
    registry.register(order, origin=__name__)
    yield
    registry.unregister(order.id)


def test_an_operator_pauses_and_resumes_an_instance(client_as, changer, make_instance):
    instance = make_instance(workflow="long-manual", started=True)
    api = client_as(changer)

    paused = api.post(url(instance, "pause"), {"reason": "audit"}, format="json")
    resumed = api.post(url(instance, "resume"))

    assert paused.status_code == 200, paused.json()
    assert paused.json()["status"] == "paused"
    assert paused.json()["paused"]["reason"] == "audit"
    assert paused.json()["paused"]["resumes_to"] == "running"
    assert paused.json()["paused"]["by"] == str(changer.pk)
    assert paused.json()["paused"]["held"] == []
    assert resumed.status_code == 200
    assert (resumed.json()["status"], resumed.json()["paused"]) == ("running", None)


def test_a_paused_instance_answers_409_paused_to_other_actions(client_as, changer,
                                                                make_instance):
    instance = make_instance(workflow="long-manual", started=True)
    api = client_as(changer)
    api.post(url(instance, "pause"))

    response = api.post(url(instance, "next"))

    assert response.status_code == 409
    assert response.json()["code"] == "paused"
    actions = api.get(url(instance)).json()["actions"]
    assert {name for name, verdict in actions.items() if verdict["allowed"]} == {
        "resume", "cancel"}


def test_the_owner_may_not_pause_their_own_instance(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)

    response = api.post(url(instance, "pause"))

    assert response.status_code == 403
    assert api.get(url(instance)).json()["actions"]["pause"]["code"] == "permission_denied"


def test_resume_of_an_instance_not_paused_answers_409(client_as, changer, make_instance):
    instance = make_instance(workflow="long-manual", started=True)

    response = client_as(changer).post(url(instance, "resume"))

    assert (response.status_code, response.json()["code"]) == (409, "not_paused")


def test_rewind_takes_the_step_to_go_back_to(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True, commands=["next", "next"])

    response = api.post(url(instance, "rewind"), {"step": "s0"}, format="json")

    assert response.status_code == 200
    assert (response.json()["current_step"], response.json()["history"]) == ("s0", ["s0"])


def test_rewind_without_a_step_answers_400(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True, commands=["next"])

    response = api.post(url(instance, "rewind"), {}, format="json")

    assert response.status_code == 400
    assert "step" in response.json()["fields"]


def test_rewind_to_a_step_not_in_the_history_answers_409(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True, commands=["next"])

    response = api.post(url(instance, "rewind"), {"step": "s9"}, format="json")

    assert (response.status_code, response.json()["code"]) == (409, "not_in_history")


def test_back_from_completed_answers_409_when_the_workflow_does_not_reopen(api,
                                                                          make_instance):
    instance = make_instance(workflow="api-order", started=True, commands=["next", "next"])

    response = api.post(url(instance, "back"))

    assert (response.status_code, response.json()["code"]) == (409, "reopen_forbidden")


def test_back_from_completed_says_it_asks_for_a_confirmation(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)
    for _ in range(40):
        api.post(url(instance, "next"))

    back = api.get(url(instance)).json()["actions"]["back"]

    assert back == {"allowed": True, "code": None, "message": None,
                    "confirm": 'Workflow "long-manual" is completed: going back reopens it'}


def test_a_rolled_back_instance_shows_its_record(client_as, changer, make_instance,
                                                 django_capture_on_commit_callbacks):
    instance = make_instance(workflow="api-order", started=True, commands=["next"])
    api = client_as(changer)

    with django_capture_on_commit_callbacks(execute=True):  # the compensation runs
        api.post(url(instance, "rollback"))
    body = api.get(url(instance)).json()

    assert (body["status"], body["history"], body["operations"]) == ("idle", [], [])
    record = body["rolled_back"]
    assert record["by"] == str(changer.pk)
    assert record["started_at"] and record["finished_at"]
    assert record["before"]["status"] == "running"
    assert (record["before"]["current_step"], record["before"]["history"]) == (
        "ship", ["pay", "ship"])
    assert record["compensations"] == [{
        "kind": "step", "target": "pay", "step": "pay", "status": "done",
        "result": {"refund": "re_1"}, "error": None,
        "finished_at": record["compensations"][0]["finished_at"]}]
    assert body["actions"]["start"]["confirm"].endswith(
        "was rolled back: starting it runs its steps and their work again")


def test_an_instance_never_rolled_back_or_paused_says_null(api, make_instance):
    body = api.get(url(make_instance(started=True))).json()

    assert (body["paused"], body["rolled_back"]) == (None, None)


def test_the_list_filters_paused_instances(client_as, changer, make_instance):
    paused = make_instance(workflow="long-manual", started=True)
    make_instance(workflow="long-manual", started=True)
    api = client_as(changer)
    api.post(url(paused, "pause"))

    found = api.get("/api/instances/?status=paused").json()["results"]

    assert [row["id"] for row in found] == [str(paused.pk)]


def test_the_schema_describes_the_new_actions_and_fields(client_as, superuser):
    schema = client_as(superuser).get("/api/schema/?format=json").json()

    paths = schema["paths"]
    assert {"/api/instances/{id}/pause/", "/api/instances/{id}/resume/",
            "/api/instances/{id}/rewind/"} <= set(paths)
    instance = schema["components"]["schemas"]["Instance"]["properties"]
    assert {"paused", "rolled_back"} <= set(instance)
    assert "paused" in schema["components"]["schemas"]["InstanceStatusEnum"]["enum"]
