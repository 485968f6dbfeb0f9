"""ETag / If-Match (optimistic concurrency) and Idempotency-Key (safe retries)."""

from __future__ import annotations

import pytest

from django_workflows import engine, services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.services import COMMAND_NAMES
from tests.api.conftest import url
from tests.factories import UserFactory

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def saved(instance: WorkflowInstance) -> tuple:
    row = reload(instance)
    return (row.revision, row.status, row.current_step, row.state, row.snapshot,
            WorkflowEvent.objects.filter(instance=row).count())


# -- If-Match ----------------------------------------------------------------------------


@pytest.mark.parametrize("header", ['"{}"', "{}", 'W/"{}"', " {} "])
def test_if_match_with_the_current_revision_lets_the_command_run(api, make_instance, header):
    instance = make_instance(workflow="long-manual", started=True)

    response = api.post(url(instance, "next"), HTTP_IF_MATCH=header.format(instance.revision))

    assert response.status_code == 200
    assert response.json()["current_step"] == "s1"


def test_if_match_star_matches_any_revision(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)

    assert api.post(url(instance, "next"), HTTP_IF_MATCH="*").status_code == 200


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_a_stale_if_match_answers_412_and_changes_nothing(api, make_instance, command):
    instance = make_instance(workflow="long-manual", started=True, commands=["next"])
    before = saved(instance)
    body = {taken.name: "s0" for taken in engine.COMMANDS[command].inputs() if taken.required}

    response = api.post(url(instance, command), body, format="json",
                        HTTP_IF_MATCH=f'"{instance.revision - 1}"')

    assert response.status_code == 412
    assert response.json()["code"] == "stale_revision"
    assert saved(instance) == before


def test_a_412_answers_the_current_revision_as_etag(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True, commands=["next"])

    response = api.post(url(instance, "next"), HTTP_IF_MATCH='"1"')

    assert response["ETag"] == f'"{instance.revision}"'


def test_a_stale_if_match_on_a_state_update_answers_412_and_changes_nothing(api,
                                                                            make_instance):
    instance = make_instance(started=True, commands=["next"])
    before = saved(instance)

    response = api.patch(url(instance, "state"), {"state": {"email": "x"}}, format="json",
                         HTTP_IF_MATCH=f'"{instance.revision - 1}"')

    assert response.status_code == 412
    assert saved(instance) == before


def test_the_etag_of_a_read_is_accepted_as_if_match(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)
    tag = api.get(url(instance))["ETag"]

    assert api.post(url(instance, "next"), HTTP_IF_MATCH=tag).status_code == 200
    assert api.post(url(instance, "next"), HTTP_IF_MATCH=tag).status_code == 412


@pytest.mark.parametrize("header", ['"three"', '"3', "3, 4", "W/3x", ""])
def test_a_malformed_if_match_answers_400(api, make_instance, header):
    instance = make_instance(workflow="long-manual", started=True)

    response = api.post(url(instance, "next"), HTTP_IF_MATCH=header)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_if_match"
    assert reload(instance).revision == instance.revision


# -- Idempotency-Key on create -----------------------------------------------------------


def create(api, key: str, **body):
    return api.post("/api/instances/", {"workflow": "wizard", **body}, format="json",
                    HTTP_IDEMPOTENCY_KEY=key)


def test_create_repeated_with_one_key_answers_the_first_response(api):
    first = create(api, "order-1", start=True)
    second = create(api, "order-1", start=True)

    assert (second.status_code, second.json()) == (first.status_code, first.json())
    assert (second["ETag"], second["Location"]) == (first["ETag"], first["Location"])


def test_create_repeated_with_one_key_creates_one_instance(api):
    create(api, "order-1")
    create(api, "order-1")

    assert WorkflowInstance.objects.count() == 1


def test_a_replayed_response_says_so(api):
    first = create(api, "order-1")
    second = create(api, "order-1")

    assert "Idempotent-Replayed" not in first
    assert second["Idempotent-Replayed"] == "true"


def test_create_with_a_used_key_and_another_body_answers_422(api):
    create(api, "order-1")

    response = create(api, "order-1", state={"email": "x@example.com", "plan": None})

    assert response.status_code == 422
    assert response.json()["code"] == "idempotency_conflict"
    assert WorkflowInstance.objects.count() == 1


def test_idempotency_keys_belong_to_one_user(client_as):
    ann, bob = UserFactory(), UserFactory()

    create(client_as(ann), "order-1")
    create(client_as(bob), "order-1")

    assert WorkflowInstance.objects.count() == 2


@pytest.mark.parametrize("key", ["", "with space", "é", "x" * 256])
def test_a_malformed_idempotency_key_answers_400(api, key):
    response = create(api, key)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_idempotency_key"
    assert not WorkflowInstance.objects.exists()


# -- Idempotency-Key on commands ---------------------------------------------------------


def test_a_command_repeated_with_one_key_runs_once(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)

    first = api.post(url(instance, "next"), HTTP_IDEMPOTENCY_KEY="step-1")
    second = api.post(url(instance, "next"), HTTP_IDEMPOTENCY_KEY="step-1")

    assert (second.status_code, second.json()) == (first.status_code, first.json())
    assert reload(instance).current_step == "s1"


def test_a_refused_command_repeated_with_one_key_answers_the_same_refusal(api, make_instance):
    instance = make_instance(started=True)
    first = api.post(url(instance, "next"), HTTP_IDEMPOTENCY_KEY="step-1")
    services.update_state(instance, {"email": "ann@example.com", "plan": None})

    second = api.post(url(instance, "next"), HTTP_IDEMPOTENCY_KEY="step-1")

    assert (second.status_code, second.json()) == (409, first.json())
    assert first.json()["code"] == "validation_failed"


def test_a_command_key_reused_for_another_command_answers_422(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)
    api.post(url(instance, "next"), HTTP_IDEMPOTENCY_KEY="step-1")

    response = api.post(url(instance, "back"), HTTP_IDEMPOTENCY_KEY="step-1")

    assert response.status_code == 422
    assert reload(instance).current_step == "s1"


def test_a_command_key_reused_with_another_body_answers_422(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)
    api.post(url(instance, "next"), {}, format="json", HTTP_IDEMPOTENCY_KEY="step-1")

    response = api.post(url(instance, "next"), {"note": "again"}, format="json",
                        HTTP_IDEMPOTENCY_KEY="step-1")

    assert response.status_code == 422


def test_a_stale_if_match_does_not_use_up_the_key(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True)

    stale = api.post(url(instance, "next"), HTTP_IF_MATCH='"99"', HTTP_IDEMPOTENCY_KEY="k")
    fresh = api.post(url(instance, "next"), HTTP_IF_MATCH=f'"{instance.revision}"',
                     HTTP_IDEMPOTENCY_KEY="k")

    assert (stale.status_code, fresh.status_code) == (412, 200)


# -- If-Match naming a revision no instance can have -------------------------------------


HUGE = "9" * 5000  # more digits than Python's int() reads (4300)


def validate(api, instance, header: str):
    return api.post(url(instance, "validate"), HTTP_IF_MATCH=header)


def update_state(api, instance, header: str):
    return api.patch(url(instance, "state"), {"state": {"email": "x", "plan": None}},
                     format="json", HTTP_IF_MATCH=header)


@pytest.mark.parametrize("send", [validate, update_state])
@pytest.mark.parametrize("header", [f'"{HUGE}"', HUGE, f'W/"{HUGE}"', f'"{"1" * 20}"'])
def test_if_match_naming_a_revision_beyond_any_answers_412_with_the_current_etag(
        api, make_instance, send, header):
    instance = make_instance(started=True)
    before = saved(instance)

    response = send(api, instance, header)

    assert response.status_code == 412, response.content
    assert response.json()["code"] == "stale_revision"
    assert response["ETag"] == f'"{instance.revision}"'
    assert saved(instance) == before


def test_if_match_with_thousands_of_leading_zeros_names_the_revision_after_them(
        api, make_instance):
    instance = make_instance(started=True)

    response = update_state(api, instance, f'"{"0" * 5000}{instance.revision}"')

    assert response.status_code == 200, response.content
