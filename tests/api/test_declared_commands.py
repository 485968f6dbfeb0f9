"""A command declared in one class gets its action and its OpenAPI entry from that alone
(the commands are in ``tests/declared_commands.py``)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from django_workflows import services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.declared_commands import declared
from tests.factories import UserFactory
from tests.services.test_background import HOLDING, runner

from .conftest import url

pytestmark = [pytest.mark.django_db, pytest.mark.needs_api]


@pytest.fixture
def commands():
    with declared() as made:
        yield made


@pytest.fixture
def api(db):
    client = APIClient()
    client.force_authenticate(UserFactory(username="root", is_superuser=True, is_staff=True))
    return client


def test_a_command_with_a_field_of_any_json_type_is_an_action_taking_that_value(api, commands):
    instance = services.create("wizard", start=True)

    for value in ({"a": [1, "two", None]}, [1.5, True], "text", 3, None):
        response = api.post(url(instance, "note"), {"value": value}, format="json")
        assert response.status_code == 200, response.json()
    assert WorkflowInstance.objects.get(pk=instance.pk).state["notes"] == [
        {"a": [1, "two", None]}, [1.5, True], "text", 3, None]
    assert response.json()["actions"]["note"] == {"allowed": True, "code": None,
                                                  "message": None, "confirm": None}


def test_its_field_is_asked_for_and_checked_as_its_type_declares(api, commands):
    instance = services.create("wizard", start=True)

    missing = api.post(url(instance, "note"), {}, format="json")
    unstorable = api.post(url(instance, "note"), {"value": {"a": "nul \u0000"}}, format="json")

    assert (missing.status_code, missing.json()["fields"]) == (
        400, {"value": ["This field is required."]})
    assert (unstorable.status_code, list(unstorable.json()["fields"])) == (400, ["value.a"])
    assert "notes" not in WorkflowInstance.objects.get(pk=instance.pk).state


def test_a_command_that_acts_on_an_operation_takes_the_operation_it_names(api, commands):
    with runner(HOLDING):  # its operation stays queued
        instance = services.create("back-office", start=True)
    operation = WorkflowInstance.objects.get(pk=instance.pk).operations[0]["id"]

    wrong = api.post(url(instance, "hold_operation"), {"operation": "nope"}, format="json")
    typed = api.post(url(instance, "hold_operation"), {"operation": operation, "hours": "x"},
                     format="json")
    held = api.post(url(instance, "hold_operation"), {"operation": operation, "hours": 3},
                    format="json")

    assert (wrong.status_code, wrong.json()["code"]) == (409, "no_operation")
    assert (typed.status_code, list(typed.json()["fields"])) == (400, ["hours"])
    assert held.status_code == 200
    event = WorkflowEvent.objects.get(instance=instance, type="operation-held")
    assert event.data == {"operation": operation, "hours": 3}


def test_both_are_in_the_schema_with_their_bodies_and_in_the_actions(api, commands):
    schema = api.get("/api/schema/", {"format": "json"}).json()

    bodies = {}
    for name in ("note", "hold_operation"):
        post = schema["paths"][f"/api/instances/{{id}}/{name}/"]["post"]
        body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        bodies[name] = schema["components"]["schemas"][body.rsplit("/", 1)[-1]]
        assert set(post["responses"]) >= {"200", "400", "409", "412"}
    assert bodies["note"]["required"] == ["value"]
    assert bodies["note"]["properties"]["value"]["nullable"] is True  # any JSON value
    assert set(bodies["hold_operation"]["properties"]) == {"operation", "hours"}
    assert bodies["hold_operation"]["properties"]["hours"]["type"] == "integer"
    actions = schema["components"]["schemas"]["Instance"]["properties"]["actions"]
    assert {"note", "hold_operation"} <= set(actions["required"])


def test_a_command_no_longer_declared_has_no_action(api):
    with declared():
        pass
    instance = services.create("wizard", start=True)

    with declared() as _:
        assert api.post(url(instance, "note"), {"value": 1}, format="json").status_code == 200
    assert "note" not in api.get(url(instance)).json()["actions"]
