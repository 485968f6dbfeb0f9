"""``PATCH /api/instances/<id>/state/`` as a JSON Merge Patch (RFC 7396).

With ``Content-Type: application/merge-patch+json`` the body is merged into
``{"state": <the current state>}``; with ``application/json`` the state is
replaced, as it always was.
"""

from __future__ import annotations

import json

import pytest

from django_workflows import Step, Transition, Workflow, registry
from django_workflows.api.parsing import merge_patch
from django_workflows.models import WorkflowInstance
from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

MERGE = "application/merge-patch+json"


def patch(client, instance, body, content_type: str = MERGE, **headers):
    text = body if isinstance(body, str) else json.dumps(body)
    return client.generic("PATCH", url(instance, "state"), text, content_type=content_type,
                          **headers)


def stored_state(instance) -> dict:
    return WorkflowInstance.objects.get(pk=instance.pk).state


@pytest.fixture
def signup():
    """The quickstart's first two steps: its validate reads ``state["email"]``."""
    def check_email(ctx):
        return None if "@" in ctx.state["email"] else "email: Enter an email address"

    registry.register(Workflow(id="api-signup", initial={"email": "", "plan": None},
                               steps=[Step("account", validate=check_email), Step("plan")],
                               transitions=[Transition("account", "plan")]))
    yield "api-signup"
    registry.unregister("api-signup")


# RFC 7396, Appendix A: target, patch, result.
@pytest.mark.parametrize(("target", "given", "result"), [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_merge_patch_does_what_rfc_7396_s_examples_say(target, given, result):
    assert merge_patch(target, given) == result


def test_a_merge_patch_changes_only_the_keys_it_names(api, make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {"state": {"plan": "pro"}})

    assert response.status_code == 200
    assert response.json()["state"] == {"email": "ann@example.com", "plan": "pro"}
    assert stored_state(instance) == {"email": "ann@example.com", "plan": "pro"}


def test_null_in_a_merge_patch_removes_the_key(api, make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": "pro"})

    response = patch(api, instance, {"state": {"plan": None}})

    assert response.json()["state"] == {"email": "ann@example.com"}


def test_objects_in_a_merge_patch_merge_key_by_key_and_other_values_replace(api,
                                                                            make_instance):
    instance = make_instance(workflow="long-manual", started=True, state={
        "address": {"city": "Oslo", "zip": "0150"}, "tags": ["a", "b"]})

    response = patch(api, instance, {"state": {"address": {"zip": "0151", "street": None},
                                               "tags": ["c"]}})

    assert response.json()["state"] == {"address": {"city": "Oslo", "zip": "0151"},
                                        "tags": ["c"]}


def test_two_merge_patches_of_different_keys_keep_both(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True, state={})

    patch(api, instance, {"state": {"a": 1}})
    patch(api, instance, {"state": {"b": 2}})

    assert stored_state(instance) == {"a": 1, "b": 2}


def test_the_empty_merge_patch_changes_no_key_and_is_recorded_as_a_state_update(
        api, make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {})

    assert response.status_code == 200
    assert stored_state(instance) == {"email": "ann@example.com", "plan": None}
    assert response.json()["revision"] == instance.revision + 1
    assert instance.events.order_by("sequence").last().type == "state-update"


def test_a_merge_patch_of_keys_not_inside_state_answers_400_saying_what_the_body_is(
        api, make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {"plan": "pro"})

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert body["detail"] == ('The body of a state update is {"state": {...}}, whose "state" is '
                              'merged into the instance\'s state; put "plan" inside "state".')
    assert body["fields"] == {"plan": ['Not a field of the body: put it inside "state".']}
    assert WorkflowInstance.objects.get(pk=instance.pk).revision == instance.revision


def test_a_key_beside_state_in_a_merge_patch_answers_400_and_nothing_is_merged(api,
                                                                              make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {"state": {"plan": "pro"}, "email": "bo@example.com"})

    assert (response.status_code, list(response.json()["fields"])) == (400, ["email"])
    assert stored_state(instance) == {"email": "ann@example.com", "plan": None}


def test_a_replacement_without_state_answers_400_saying_what_the_body_is(api, make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {"plan": "pro"}, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        'The body of a state update is {"state": {...}}, whose "state" replaces the '
        "instance's state")
    assert set(response.json()["fields"]) == {"state", "plan"}
    assert stored_state(instance) == {"email": "ann@example.com", "plan": None}


def test_a_body_of_many_stray_keys_is_answered_naming_only_the_first_ten(api, make_instance):
    response = patch(api, make_instance(started=True), {f"k{n}": n for n in range(500)})

    assert response.status_code == 400
    assert len(response.json()["fields"]) == 10
    assert response.json()["detail"].endswith('"k9", ... inside "state".')


def test_plain_json_still_replaces_the_whole_state(api, make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {"state": {"plan": "pro"}}, content_type="application/json")

    assert response.json()["state"] == {"plan": "pro"}


def test_a_merged_state_that_breaks_the_schema_answers_400_and_stores_nothing(api,
                                                                             make_instance):
    instance = make_instance(started=True, state={"email": "ann@example.com", "plan": None})

    response = patch(api, instance, {"state": {"plan": "gold"}})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_state"
    assert "state.plan" in response.json()["fields"]
    assert stored_state(instance) == {"email": "ann@example.com", "plan": None}


@pytest.mark.parametrize("body", ['{"state": null}', '{"state": [1]}', '{"state": "x"}', "[1]",
                                  '"state"'])
def test_a_merge_patch_whose_state_is_not_an_object_answers_400(api, make_instance, body):
    instance = make_instance(started=True)

    response = patch(api, instance, body)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert stored_state(instance) == instance.state


def test_a_malformed_merge_patch_answers_400(api, make_instance):
    response = patch(api, make_instance(started=True), '{"state": {"plan": ')

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


@pytest.mark.parametrize("charset", ["utf-7", "latin-1", "utf-16"])
def test_a_merge_patch_in_another_charset_than_utf8_answers_415(api, make_instance, charset):
    instance = make_instance(started=True)

    response = patch(api, instance, '{"state": {"email": "+ADw-script+AD4-"}}',
                     content_type=f"{MERGE}; charset={charset}")

    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_charset"
    assert stored_state(instance) == instance.state


def test_a_merge_patch_in_utf8_declared_is_accepted(api, make_instance):
    instance = make_instance(started=True, state={"email": "", "plan": None})

    response = patch(api, instance, {"state": {"email": "zoë@example.com"}},
                     content_type=f"{MERGE}; charset=UTF-8")

    assert response.json()["state"] == {"email": "zoë@example.com", "plan": None}


def test_a_merge_patch_with_a_stale_if_match_answers_412_and_changes_nothing(api,
                                                                            make_instance):
    instance = make_instance(started=True, commands=["next"])
    before = stored_state(instance)

    response = patch(api, instance, {"state": {"plan": "pro"}},
                     HTTP_IF_MATCH=f'"{instance.revision - 1}"')

    assert response.status_code == 412
    assert response["ETag"] == f'"{instance.revision}"'
    assert stored_state(instance) == before


def test_a_merge_patch_with_the_current_if_match_answers_the_next_etag(api, make_instance):
    instance = make_instance(started=True)

    response = patch(api, instance, {"state": {"plan": "pro"}},
                     HTTP_IF_MATCH=f'"{instance.revision}"')

    assert response.status_code == 200
    assert response["ETag"] == f'"{instance.revision + 1}"'


def test_a_merge_patch_unblocks_a_blocked_instance(api, make_instance):
    instance = make_instance(blocked=True)

    response = patch(api, instance, {"state": {"email": "bo@example.org"}})

    assert (response.json()["status"], response.json()["errors"]) == ("running", [])


def test_a_merge_patch_that_makes_the_state_too_large_answers_413(api, make_instance,
                                                                 settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "MAX_STATE_BYTES": 1000}
    instance = make_instance(workflow="long-manual", started=True, state={"a": "x" * 600})

    response = patch(api, instance, {"state": {"b": "y" * 600}})

    assert response.status_code == 413
    assert response.json()["code"] == "state_too_large"
    assert stored_state(instance) == {"a": "x" * 600}


def test_other_endpoints_do_not_take_a_merge_patch(api, make_instance):
    response = api.generic("POST", url(make_instance(started=True), "cancel"), "{}",
                           content_type=MERGE)

    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


def test_the_schema_documents_both_bodies_of_the_state_update(api):
    operation = api.get("/api/schema/", {"format": "json"}).json()[
        "paths"]["/api/instances/{id}/state/"]["patch"]

    assert set(operation["requestBody"]["content"]) == {"application/json", MERGE}


def test_the_quickstart_s_email_survives_a_merge_patch_of_the_plan_and_next_moves_on(
        api, make_instance, signup):
    instance = make_instance(workflow=signup, started=True,
                             state={"email": "ann@example.com", "plan": None})

    patch(api, instance, {"state": {"plan": "pro"}})
    response = api.post(url(instance, "next"))

    assert response.status_code == 200
    assert response.json()["current_step"] == "plan"


def test_replacing_the_quickstart_s_state_without_email_fails_next_saying_what_is_missing(
        api, make_instance, signup):
    instance = make_instance(workflow=signup, started=True,
                             state={"email": "ann@example.com", "plan": None})

    patch(api, instance, {"state": {"plan": "pro"}}, content_type="application/json")
    api.post(url(instance, "next"))

    failed = api.get(url(instance)).json()
    assert failed["status"] == "failed"
    assert failed["errors"] == ['The validate hook of step "account" read state["email"], '
                                "which the state does not have"]
