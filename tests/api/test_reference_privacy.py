"""A reference taken answers 409 ``reference_taken`` to everyone (a reference is given
once per workflow), but names the instance that has it (``id``) only to whoever may see
that instance (issue 36: claim numbers are sequential, and a customer mapped every claim
to its id). Anyone else's instance is as if it did not exist.
"""

from __future__ import annotations

import pytest

from tests.api.conftest import with_permission
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.needs_api]


def create(client, reference: str, workflow: str = "wizard", **headers):
    return client.post("/api/instances/", {"workflow": workflow, "reference": reference},
                       format="json", headers=headers)


@pytest.fixture
def taken(api):
    """The owner's instance with the reference ``C-1001``."""
    response = create(api, "C-1001")
    assert response.status_code == 201
    return response.json()["id"]


def test_a_reference_another_customer_took_answers_409_without_its_instance(
        client_as, stranger, taken):
    response = create(client_as(stranger), "C-1001")

    assert response.status_code == 409
    assert response.json() == {
        "detail": 'An instance of workflow "wizard" with reference "C-1001" already exists',
        "code": "reference_taken"}


def test_with_an_idempotency_key_the_answer_names_no_instance_either(
        client_as, stranger, taken):
    client = client_as(stranger)

    for _ in range(2):  # the first try and its replay
        response = create(client, "C-1001", **{"Idempotency-Key": "claim-C-1001"})
        assert response.status_code == 409
        assert "id" not in response.json()


def test_the_owner_hears_which_instance_has_the_reference(api, taken):
    response = create(api, "C-1001")

    assert (response.status_code, response.json()["code"]) == (409, "reference_taken")
    assert response.json()["id"] == taken


@pytest.mark.parametrize("who", ["viewer", "changer", "superuser"])
def test_who_may_see_every_instance_hears_which_has_the_reference(
        client_as, request, taken, who):
    response = create(client_as(request.getfixturevalue(who)), "C-1001")

    assert response.status_code == 409
    assert response.json()["id"] == taken


def test_an_instance_the_definition_hides_is_not_named(client_as, owner):
    assert create(client_as(owner), "R-7", workflow="restricted").status_code == 201
    hidden_from = with_permission("view_workflowinstance", username="no-view-auditor")

    response = create(client_as(hidden_from), "R-7", workflow="restricted")

    assert response.status_code == 409
    assert "id" not in response.json()


def test_a_candidate_of_the_instance_s_open_task_hears_which_has_it(client_as, owner):
    from django.contrib.auth.models import Group

    claim = client_as(owner).post("/api/instances/", {
        "workflow": "approval", "reference": "E-12", "start": True}, format="json").json()
    assert client_as(owner).post(f"/api/instances/{claim['id']}/next/").status_code == 200
    manager = UserFactory(username="manager")
    manager.groups.add(Group.objects.get_or_create(name="managers")[0])
    assert client_as(manager).get(f"/api/instances/{claim['id']}/").status_code == 200

    response = create(client_as(manager), "E-12", workflow="approval")

    assert response.status_code == 409
    assert response.json()["id"] == claim["id"]


def test_the_schema_says_the_id_is_named_only_to_who_may_see_it(client_as, superuser):
    schema = client_as(superuser).get("/api/schema/", {"format": "json"}).json()

    described = schema["components"]["schemas"]["Error"]["properties"]["id"]["description"]
    assert "may see" in described
