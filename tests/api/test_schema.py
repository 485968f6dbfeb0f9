"""The OpenAPI 3 schema (drf-spectacular) at /api/schema/: valid, and true to the contract."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from django_workflows.engine import TASK_COMMANDS
from django_workflows.services import COMMAND_NAMES
from tests.api.test_instances import CONTRACT_FIELDS
from tests.factories import UserFactory

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

CONTRACT_PATHS = {
    "/api/": {"get"},
    "/api/workflows/": {"get"},
    "/api/workflows/{id}/": {"get"},
    "/api/instances/": {"get", "post"},
    "/api/instances/{id}/": {"get"},
    "/api/instances/{id}/state/": {"patch"},
    "/api/instances/{id}/events/": {"get"},
    "/api/instances/{id}/tasks/": {"get"},
    "/api/instances/{id}/operations/{operation}/journal/": {"get"},
    **{f"/api/instances/{{id}}/{name}/": {"post"} for name in COMMAND_NAMES},
    "/api/tasks/": {"get"},
    "/api/tasks/{id}/": {"get"},
    **{f"/api/tasks/{{id}}/{name}/": {"post"} for name in TASK_COMMANDS},
    "/api/signals/": {"post"},
    "/api/schedules/": {"get"},
    "/api/schedules/{id}/": {"get"},
}


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    from rest_framework.test import APIClient

    client = APIClient()
    with django_db_blocker.unblock():  # any signed-in user may read it
        user = UserFactory()
        client.force_authenticate(user)
        response = client.get("/api/schema/", {"format": "json"})
        user.delete()
    assert response.status_code == 200
    return json.loads(response.content)


def test_the_schema_is_generated_without_warnings_and_validates(tmp_path):
    # --validate checks it against the OpenAPI 3 specification's own JSON Schema.
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
                 "--file", str(tmp_path / "schema.json"))

    assert json.loads((tmp_path / "schema.json").read_text())["openapi"].startswith("3.")


def test_the_schema_is_served_to_signed_in_users(schema):
    assert schema["openapi"].startswith("3.")


@pytest.mark.parametrize("query", [{}, {"format": "json"}, {"format": "yaml"}])
def test_the_schema_is_refused_to_anonymous_users_as_a_json_error(query):
    from rest_framework.test import APIClient

    response = APIClient().get("/api/schema/", query)

    assert response.status_code == 401  # the test settings try HTTP Basic first
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_authenticated"
    assert "WWW-Authenticate" in response


def test_the_schema_is_refused_to_wrong_credentials():
    from rest_framework.test import APIClient

    response = APIClient().get("/api/schema/", HTTP_AUTHORIZATION="Basic bm9ib2R5Om5vcGU=")

    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_the_schema_is_public_when_the_setting_says_so(settings):
    from rest_framework.test import APIClient

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "PUBLIC_SCHEMA": True}

    response = APIClient().get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    assert json.loads(response.content)["openapi"].startswith("3.")


def test_the_schema_has_every_endpoint_of_the_contract(schema):
    found = {path: set(ops) - {"parameters"} for path, ops in schema["paths"].items()
             if path != "/api/schema/"}

    assert found == CONTRACT_PATHS


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_every_command_documents_its_refusal_and_stale_answers(schema, command):
    responses = schema["paths"][f"/api/instances/{{id}}/{command}/"]["post"]["responses"]

    assert {"200", "400", "401", "403", "404", "409", "412", "422"} <= set(responses)
    assert responses["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_every_command_documents_if_match_and_idempotency_key(schema, command):
    parameters = schema["paths"][f"/api/instances/{{id}}/{command}/"]["post"]["parameters"]

    assert {(p["in"], p["name"]) for p in parameters} >= {
        ("header", "If-Match"), ("header", "Idempotency-Key"), ("path", "id")}


def test_commands_document_the_etag_they_answer(schema):
    ok = schema["paths"]["/api/instances/{id}/next/"]["post"]["responses"]["200"]

    assert "ETag" in ok["headers"]


def test_the_state_update_documents_400_412_and_413(schema):
    responses = schema["paths"]["/api/instances/{id}/state/"]["patch"]["responses"]

    assert {"200", "400", "404", "409", "412", "413"} <= set(responses)


def test_create_documents_201_400_413_and_422(schema):
    responses = schema["paths"]["/api/instances/"]["post"]["responses"]

    assert {"201", "400", "413", "422"} <= set(responses)


def test_the_instance_component_has_every_field_of_the_contract(schema):
    instance = schema["components"]["schemas"]["Instance"]

    assert set(instance["properties"]) == CONTRACT_FIELDS
    assert set(instance["required"]) == CONTRACT_FIELDS


def component(schema, ref: str) -> dict:
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


def test_the_instance_documents_what_it_waits_for(schema):
    waiting = schema["components"]["schemas"]["Instance"]["properties"]["waiting"]
    shape = component(schema, waiting["allOf"][0]["$ref"])

    assert waiting["nullable"] is True
    assert set(shape["required"]) == {"kind", "name", "correlation", "until", "operation",
                                      "position", "task"}
    assert component(schema, shape["properties"]["kind"]["$ref"])["enum"] == [
        "signal", "timer", "task"]
    assert shape["properties"]["until"]["format"] == "date-time"
    assert all(shape["properties"][name]["nullable"] for name in (
        "name", "correlation", "until", "operation", "position", "task"))


def test_sending_a_signal_documents_each_answer(schema):
    operation = schema["paths"]["/api/signals/"]["post"]
    responses = operation["responses"]

    assert {"200", "202", "400", "401", "403", "404", "409", "413"} <= set(responses)
    assert responses["200"]["content"] == responses["202"]["content"]
    assert "Idempotent-Replayed" in responses["200"]["headers"]
    body = component(schema, operation["requestBody"]["content"]["application/json"][
        "schema"]["$ref"])
    assert set(body["properties"]) == {"workflow", "signal", "payload", "instance", "reference",
                                       "correlation", "message_id"}
    assert set(body["required"]) == {"workflow", "signal"}


def test_the_error_component_has_detail_and_code(schema):
    error = schema["components"]["schemas"]["Error"]

    assert set(error["required"]) == {"detail", "code"}


def test_the_instance_list_documents_its_filters(schema):
    parameters = schema["paths"]["/api/instances/"]["get"]["parameters"]

    assert {p["name"] for p in parameters} >= {
        "workflow", "status", "current_step", "owner", "created_after", "created_before",
        "updated_after", "updated_before", "ordering", "page", "page_size"}


def test_every_reference_in_the_schema_names_a_component(schema):
    refs, stack = set(), [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            refs.update(v for k, v in item.items() if k == "$ref")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)

    names = {f"#/components/schemas/{name}" for name in schema["components"]["schemas"]}
    assert refs - names == set()


def test_every_operation_documents_401_with_its_challenge_and_403(schema):
    operations = {(path, method): operation for path, item in schema["paths"].items()
                  for method, operation in item.items() if method != "parameters"}

    for (path, method), operation in operations.items():
        if path == "/api/schema/":
            continue
        responses = operation["responses"]
        assert {"401", "403"} <= set(responses), (method, path)
        assert responses["401"]["headers"]["WWW-Authenticate"]["required"], (method, path)


def test_the_root_documents_its_links(schema):
    ok = schema["paths"]["/api/"]["get"]["responses"]["200"]["content"]["application/json"]
    root = schema["components"]["schemas"][ok["schema"]["$ref"].rsplit("/", 1)[1]]

    assert set(root["required"]) == {"workflows", "instances", "tasks", "schedules", "schema"}
