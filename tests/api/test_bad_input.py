"""Bad input answers a JSON 4xx that names the problem; never a 500, never HTML."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import InterfaceError, OperationalError, connection
from django.test import override_settings

from django_workflows.models import WorkflowInstance
from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

LIMIT = 256 * 1024  # the default MAX_STATE_BYTES


def post_raw(client, path: str, body: str | bytes, content_type: str = "application/json"):
    return client.generic("POST", path, body, content_type=content_type)


def error(response, status: int) -> dict:
    """The JSON error body of a response with that status."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["detail"] and body["code"]
    return body


# -- malformed bodies --------------------------------------------------------------------


def test_malformed_json_on_create_answers_400(api):
    body = error(post_raw(api, "/api/instances/", '{"workflow": "wizard"'), 400)

    assert body["code"] == "parse_error"


def test_malformed_json_on_a_command_answers_400(api, make_instance):
    error(post_raw(api, url(make_instance(), "start"), "{nope"), 400)


def test_malformed_json_on_a_state_update_answers_400(api, make_instance):
    response = api.generic("PATCH", url(make_instance(), "state"), "[1,",
                           content_type="application/json")

    error(response, 400)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_numbers_json_cannot_carry_answer_400(api, text):
    body = '{"workflow": "wizard", "state": {"x": TEXT}}'.replace("TEXT", text)

    error(post_raw(api, "/api/instances/", body), 400)


def test_endless_nesting_answers_400(api):
    nested = "[" * 5000 + "]" * 5000
    body = '{"workflow": "wizard", "state": {"x": NESTED}}'.replace("NESTED", nested)

    error(post_raw(api, "/api/instances/", body), 400)


def test_a_body_that_is_not_utf8_answers_400(api):
    error(post_raw(api, "/api/instances/", b'{"workflow": "\xff"}'), 400)


def test_a_body_that_is_not_an_object_answers_400(api):
    body = error(post_raw(api, "/api/instances/", "[]"), 400)

    assert "non_field_errors" in body["fields"]


def test_a_command_with_a_body_that_is_not_an_object_answers_400(api, make_instance):
    error(post_raw(api, url(make_instance(), "start"), "[1]"), 400)


def test_a_form_body_answers_415(api):
    response = api.post("/api/instances/", {"workflow": "wizard"}, format="multipart")

    assert error(response, 415)["code"] == "unsupported_media_type"


# -- wrong fields ------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "field"), [
    ({}, "workflow"),
    ({"workflow": 5}, "workflow"),
    ({"workflow": "wizard", "state": "x"}, "state"),
    ({"workflow": "wizard", "state": [1]}, "state"),
    ({"workflow": "wizard", "state": None}, "state"),
    ({"workflow": "wizard", "start": "maybe"}, "start"),
])
def test_a_field_of_the_wrong_type_answers_400_naming_it(api, body, field):
    response = api.post("/api/instances/", body, format="json")

    assert field in error(response, 400)["fields"]
    assert not WorkflowInstance.objects.exists()


def test_an_unknown_workflow_answers_400_naming_the_field(api):
    body = error(api.post("/api/instances/", {"workflow": "nope"}, format="json"), 400)

    assert body["code"] == "invalid"
    assert body["fields"]["workflow"] == ['"nope" is not a valid choice.']


def test_a_state_update_without_a_state_answers_400(api, make_instance):
    response = api.patch(url(make_instance(), "state"), {}, format="json")

    assert "state" in error(response, 400)["fields"]


def test_a_nul_character_in_the_state_answers_400_naming_the_field(api):
    response = api.post("/api/instances/", {"workflow": "wizard",
                                            "state": {"email": "a\x00b", "plan": None}},
                        format="json")

    assert error(response, 400)["fields"] == {
        "state.email": ["This text must not contain NUL characters."]}


def test_an_unpaired_surrogate_in_the_state_answers_400(api):
    body = '{"workflow": "wizard", "state": {"list": ["ok", "\\ud800"]}}'

    assert "state.list.1" in error(post_raw(api, "/api/instances/", body), 400)["fields"]


def test_a_state_nested_too_deeply_answers_400(api):
    state: dict = {}
    for _ in range(150):
        state = {"x": state}

    response = api.post("/api/instances/", {"workflow": "wizard", "state": state},
                        format="json")

    assert error(response, 400)["code"] == "invalid"


# -- the definition's schema -------------------------------------------------------------


def test_a_state_that_breaks_the_schema_on_create_answers_400_naming_the_field(api):
    response = api.post("/api/instances/", {"workflow": "wizard", "state": {"age": -1}},
                        format="json")

    body = error(response, 400)
    assert body["code"] == "invalid_state"
    assert list(body["fields"]) == ["state.age"]
    assert not WorkflowInstance.objects.exists()


def test_a_state_that_breaks_the_schema_on_update_answers_400_naming_the_field(
        api, make_instance):
    instance = make_instance(started=True)

    response = api.patch(url(instance, "state"), {"state": {"plan": "gold"}}, format="json")

    body = error(response, 400)
    assert (body["code"], list(body["fields"])) == ("invalid_state", ["state.plan"])
    assert WorkflowInstance.objects.get(pk=instance.pk).state == instance.state


# -- sizes -------------------------------------------------------------------------------


def test_an_oversized_state_on_create_answers_413_with_the_limit(api):
    state = {"blob": "x" * LIMIT}

    body = error(api.post("/api/instances/", {"workflow": "wizard", "state": state},
                          format="json"), 413)

    assert body["code"] == "state_too_large"
    assert str(LIMIT) in body["detail"]
    assert not WorkflowInstance.objects.exists()


def test_an_oversized_state_update_answers_413_and_stores_nothing(api, make_instance):
    instance = make_instance(started=True)

    response = api.patch(url(instance, "state"), {"state": {"blob": "x" * LIMIT}},
                         format="json")

    assert str(LIMIT) in error(response, 413)["detail"]
    assert WorkflowInstance.objects.get(pk=instance.pk).state == instance.state


def test_the_state_limit_follows_the_setting(api, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "MAX_STATE_BYTES": 100}

    body = error(api.post("/api/instances/", {"workflow": "wizard",
                                              "state": {"blob": "x" * 200}}, format="json"), 413)

    assert "limit is 100 bytes" in body["detail"]


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_larger_than_django_allows_answers_413_as_json(api):
    body = json.dumps({"workflow": "wizard", "state": {"blob": "x" * 2000}})

    response = post_raw(api, "/api/instances/", body)

    assert error(response, 413)["code"] == "request_too_large"
    assert "1000 bytes" in response.json()["detail"]


# -- unknown things ----------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    "/api/instances/not-a-uuid/",
    "/api/instances/not-a-uuid/next/",
    "/api/instances/12345/events/",
    "/api/nothing-here/",
    "/api/",
])
def test_an_unknown_url_under_the_api_answers_a_json_404(api, path):
    assert error(api.get(path), 404)["code"] == "not_found"


def test_an_unknown_command_answers_a_json_404(api, make_instance):
    assert error(api.post(url(make_instance(), "explode")), 404)["code"] == "not_found"


def test_a_missing_slash_answers_a_json_404_with_a_hint(api):
    assert "with a slash" in error(api.get("/api/instances"), 404)["detail"]


def test_an_unknown_instance_answers_a_json_404(api):
    error(api.get(url(str(uuid.uuid4()))), 404)


def test_a_command_on_an_unknown_instance_answers_a_json_404(api):
    error(api.post(url(str(uuid.uuid4()), "start")), 404)


def test_an_unknown_workflow_definition_answers_a_json_404(api):
    error(api.get("/api/workflows/nope/"), 404)


def test_a_method_an_endpoint_does_not_have_answers_405(api, make_instance):
    assert error(api.delete(url(make_instance())), 405)["code"] == "method_not_allowed"


def test_a_client_that_accepts_only_html_gets_a_json_406(api):
    assert error(api.get("/api/instances/", HTTP_ACCEPT="text/html"), 406)


# -- query parameters --------------------------------------------------------------------


@pytest.mark.parametrize("query", [
    {"status": "bogus"}, {"created_after": "yesterday"}, {"owner": "abc"}, {"owner": "1.5"},
    {"owner": "9" * 5000},
    {"workflow": "a\x00b"}, {"created_after": "0001-01-01T00:00:00+05:00"},
    {"updated_before": "9999-12-31T23:59:59-05:00"}, {"ordering": "colour"},
    {"page_size": "0"}, {"page_size": "1.5"},
])
def test_a_bad_filter_value_answers_400(api, query):
    assert error(api.get("/api/instances/", query), 400)["fields"]


def test_a_page_that_does_not_exist_answers_a_json_404(api):
    error(api.get("/api/instances/", {"page": 99}), 404)


# -- the database going away -------------------------------------------------------------


@pytest.mark.parametrize("failure", [
    OperationalError("the database system is shutting down"),
    InterfaceError("connection already closed"),
])
def test_a_database_outage_answers_a_json_503_to_try_again(api, make_instance, failure):
    instance = make_instance()

    def database_gone(execute, sql, params, many, context):
        raise failure

    with connection.execute_wrapper(database_gone):
        response = api.post(url(instance, "start"))

    assert error(response, 503)["code"] == "database_unavailable"
    assert response["Retry-After"] == "1"
    instance.refresh_from_db()
    assert instance.status == "idle"


# -- charsets ----------------------------------------------------------------------------


UTF7_MARKUP = '{"workflow": "wizard", "state": {"email": "+ADw-script+AD4-", "plan": null}}'


@pytest.mark.parametrize(("charset", "body"), [
    ("utf-7", UTF7_MARKUP.encode()),
    ("UTF-7", UTF7_MARKUP.encode()),
    ("latin-1", '{"workflow": "wizard", "state": {"email": "é", "plan": null}}'.encode("latin-1")),
    ("iso-8859-1", b'{"workflow": "wizard"}'),
    ("utf-16", '{"workflow": "wizard"}'.encode("utf-16")),
    ("us-ascii", b'{"workflow": "wizard"}'),
    ("no-such-charset", b'{"workflow": "wizard"}'),
])
def test_a_body_declared_in_a_charset_other_than_utf8_answers_415_and_creates_nothing(
        api, charset, body):
    response = post_raw(api, "/api/instances/", body,
                        content_type=f"application/json; charset={charset}")

    assert error(response, 415)["code"] == "unsupported_charset"
    assert not WorkflowInstance.objects.exists()


def test_a_state_update_declared_in_utf7_answers_415(api, make_instance):
    instance = make_instance(started=True)

    response = api.generic("PATCH", url(instance, "state"),
                           '{"state": {"email": "+ADw-script+AD4-", "plan": null}}',
                           content_type="application/json; charset=utf-7")

    assert error(response, 415)["code"] == "unsupported_charset"
    assert WorkflowInstance.objects.get(pk=instance.pk).state == instance.state


@pytest.mark.parametrize("content_type", [
    "application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8",
    'application/json; charset="utf-8"', "application/json;CHARSET=Utf-8",
])
def test_a_body_in_utf8_with_or_without_its_charset_is_accepted(api, content_type):
    body = '{"workflow": "wizard", "state": {"email": "zoë@example.com", "plan": null}}'

    response = post_raw(api, "/api/instances/", body.encode(), content_type=content_type)

    assert response.status_code == 201, response.content
    assert response.json()["state"]["email"] == "zoë@example.com"


@pytest.mark.parametrize("text", ["9" * 5000, "-" + "9" * 5000])
def test_an_integer_of_thousands_of_digits_answers_400_saying_so(api, text):
    body = '{"workflow": "wizard", "state": {"x": TEXT}}'.replace("TEXT", text)

    response = post_raw(api, "/api/instances/", body)

    assert "5000 digits" in error(response, 400)["detail"]
