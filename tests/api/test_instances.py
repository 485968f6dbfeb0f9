"""Creating and reading instances: the representation of DESIGN.md §4, exactly.

Background work never runs here: these tests run inside a transaction that
never commits, so the runner is never handed anything.
"""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.engine import Progress
from django_workflows.models import WorkflowInstance
from django_workflows.runners.worker import DatabaseSink
from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

CONTRACT_FIELDS = {
    "id", "workflow", "version", "status", "state", "current_step", "completed_steps",
    "skipped_steps", "history", "errors", "operations", "parallel", "nested", "revision",
    "created_at", "updated_at", "started_at", "completed_at", "reference", "waiting", "actions",
    "paused", "rolled_back",
}


def test_create_answers_201_with_an_idle_instance(api):
    response = api.post("/api/instances/", {"workflow": "wizard"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert (body["workflow"], body["status"], body["revision"]) == ("wizard", "idle", 1)
    assert body["state"] == {"email": "", "plan": None}


def test_create_records_the_requesting_user_as_owner(api, owner):
    response = api.post("/api/instances/", {"workflow": "wizard"}, format="json")

    assert WorkflowInstance.objects.get(pk=response.json()["id"]).owner == owner


def test_create_with_a_state_uses_it(api):
    state = {"email": "ann@example.com", "plan": "pro"}

    response = api.post("/api/instances/", {"workflow": "wizard", "state": state},
                        format="json")

    assert response.json()["state"] == state


def test_create_with_start_enters_the_first_step(api):
    response = api.post("/api/instances/", {"workflow": "wizard", "start": True}, format="json")

    body = response.json()
    assert (body["status"], body["current_step"], body["history"]) == (
        "running", "account", ["account"])
    assert body["started_at"] is not None


def test_create_answers_the_location_and_etag_of_the_new_instance(api):
    response = api.post("/api/instances/", {"workflow": "wizard"}, format="json")

    body = response.json()
    assert response["Location"].endswith(f"/api/instances/{body['id']}/")
    assert response["ETag"] == f'"{body["revision"]}"'


def test_detail_has_exactly_the_fields_of_the_contract(api, make_instance):
    instance = make_instance(started=True)

    response = api.get(url(instance))

    assert response.status_code == 200
    assert set(response.json()) == CONTRACT_FIELDS


def test_detail_answers_the_revision_as_a_quoted_etag(api, make_instance):
    instance = make_instance(started=True, commands=["next"])

    response = api.get(url(instance))

    assert response["ETag"] == f'"{instance.revision}"'
    assert response.json()["revision"] == instance.revision


def test_detail_shows_steps_history_and_errors(api, make_instance):
    instance = make_instance(blocked=True)

    body = api.get(url(instance)).json()

    assert (body["status"], body["current_step"]) == ("blocked", "account")
    assert body["history"] == ["account"]
    assert body["errors"] == ["Email is required"]
    assert (body["completed_steps"], body["skipped_steps"]) == ([], [])


def test_current_step_is_null_before_the_start(api, make_instance):
    assert api.get(url(make_instance())).json()["current_step"] is None


def test_nested_is_null_without_a_child(api, make_instance):
    assert api.get(url(make_instance(started=True))).json()["nested"] is None


def test_nested_shows_the_child_in_short(api, make_instance):
    parent = make_instance(workflow="parent", started=True, commands=["next"])
    child = WorkflowInstance.objects.get(parent=parent)

    nested = api.get(url(parent)).json()["nested"]

    assert nested == {"id": str(child.pk), "workflow": "child-check", "status": "running",
                      "current_step": "review"}


def test_a_nested_child_belongs_to_the_parent_s_owner(api, make_instance):
    parent = make_instance(workflow="parent", started=True, commands=["next"])
    child = WorkflowInstance.objects.get(parent=parent)

    assert api.get(url(child)).status_code == 200


def test_operations_show_the_current_step_s_work_without_fencing_tokens(api, make_instance):
    instance = make_instance(workflow="back-office", started=True)

    operations = api.get(url(instance)).json()["operations"]

    assert [(op["id"], op["step"], op["status"], op["attempt"]) for op in operations] == [
        ("charge", "pay", "queued", 1)]
    assert "token" not in operations[0]


def test_operations_show_what_a_running_attempt_reported(api, make_instance):
    instance = make_instance(workflow="back-office", started=True)
    token = instance.operations[0]["token"]
    services.claim_attempt(token)  # as a worker does, then reports as it goes
    sink = DatabaseSink(token, threaded=False)
    sink.report(status="running", progress=Progress(1, 2, "charging"), logs=["charged"])
    sink.close()

    operation = api.get(url(instance)).json()["operations"][0]

    assert operation["status"] == "running"
    assert operation["progress"] == {"current": 1, "total": 2, "message": "charging"}
    assert operation["logs"] == ["charged"]


def test_times_are_iso_8601(api, make_instance):
    body = api.get(url(make_instance(started=True))).json()

    assert body["created_at"].endswith("Z") and "T" in body["started_at"]
    assert body["completed_at"] is None


def test_list_answers_a_page_of_the_user_s_instances(api, make_instance):
    first, second = make_instance(), make_instance()

    response = api.get("/api/instances/")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert {item["id"] for item in body["results"]} == {str(first.pk), str(second.pk)}
    assert set(body["results"][0]) == CONTRACT_FIELDS


def test_list_shows_nested_children_in_short(api, make_instance):
    parent = make_instance(workflow="parent", started=True, commands=["next"])

    results = api.get("/api/instances/", {"workflow": "parent"}).json()["results"]

    assert [item["nested"]["workflow"] for item in results if item["id"] == str(parent.pk)] == [
        "child-check"]


def test_create_with_a_reference_shows_it_and_a_second_one_answers_409_with_the_first(api):
    first = api.post("/api/instances/", {"workflow": "wizard", "reference": "A-1001"},
                     format="json")
    second = api.post("/api/instances/", {"workflow": "wizard", "reference": "A-1001"},
                      format="json")

    assert (first.status_code, first.json()["reference"]) == (201, "A-1001")
    assert second.status_code == 409
    assert (second.json()["code"], second.json()["id"]) == ("reference_taken",
                                                           first.json()["id"])


def test_the_same_reference_may_name_instances_of_two_workflows(api):
    for workflow in ("wizard", "long-manual"):
        assert api.post("/api/instances/", {"workflow": workflow, "reference": "R-1"},
                        format="json").status_code == 201


def test_the_list_filters_by_reference(api):
    api.post("/api/instances/", {"workflow": "wizard", "reference": "A-1"}, format="json")
    api.post("/api/instances/", {"workflow": "wizard"}, format="json")

    found = api.get("/api/instances/", {"reference": "A-1"}).json()

    assert [item["reference"] for item in found["results"]] == ["A-1"]


def test_a_reference_with_a_nul_character_answers_400(api):
    response = api.post("/api/instances/", {"workflow": "wizard", "reference": "A\x00"},
                        format="json")

    assert (response.status_code, response.json()["code"]) == (400, "invalid")


@pytest.mark.parametrize("reference", [8046334282244669.0, 17, True])
def test_a_reference_that_is_not_text_answers_400_naming_it(api, reference):
    response = api.post("/api/instances/", {"workflow": "wizard", "reference": reference},
                        format="json")

    assert (response.status_code, response.json()["code"]) == (400, "invalid")
    assert "reference" in response.json()["fields"]
    assert not WorkflowInstance.objects.exists()
