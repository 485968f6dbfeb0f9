"""The API's task names its instance's reference, its owner and its root instance (alice's
onboarding, not the child's id), and the task list filters by them."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from django_workflows.models import WorkflowInstance, WorkflowTask
from tests.factories import UserFactory
from tests.task_shows import claim_at_approval, onboarding_of, shown_workflows  # noqa: F401

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db,
              pytest.mark.usefixtures("shown_workflows")]


def manager(name: str = "mo") -> APIClient:
    user = UserFactory(username=name)
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def two_reviews(shown_workflows):  # noqa: F811 (the fixture, first)
    """Alice's and Bob's onboardings, each with an identity check waiting for review."""
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    return onboarding_of(alice, reference="O-ALICE"), onboarding_of(bob)


def child_of(root: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(parent=root)


def test_a_nested_workflows_task_names_its_owner_and_the_root_it_is_part_of(two_reviews):
    alices, bobs = two_reviews

    found = manager().get("/api/tasks/").json()["results"]

    assert sorted((t["instance"], t["reference"], t["owner_name"], t["root"]["id"],
                   t["root"]["reference"], t["root"]["workflow"]) for t in found) == sorted([
        (str(child_of(alices).pk), None, "alice", str(alices.pk), "O-ALICE", "shown-onboarding"),
        (str(child_of(bobs).pk), None, "bob", str(bobs.pk), None, "shown-onboarding")])
    assert {t["owner"] for t in found} == {alices.owner_id, bobs.owner_id}


def test_a_task_of_an_instance_that_is_not_nested_is_its_own_root():
    instance = claim_at_approval(UserFactory(username="ann"), reference="E-2026-0001")

    [task] = manager().get("/api/tasks/").json()["results"]

    assert (task["reference"], task["owner"], task["owner_name"], task["root"]) == (
        "E-2026-0001", instance.owner_id, "ann",
        {"id": str(instance.pk), "workflow": "shown-claim", "reference": "E-2026-0001"})


def test_one_task_names_its_root_too(two_reviews):
    alices, _ = two_reviews
    task = WorkflowTask.objects.get(instance=child_of(alices), status="open")

    body = manager().get(f"/api/tasks/{task.pk}/").json()

    assert (body["owner_name"], body["root"]["reference"]) == ("alice", "O-ALICE")


def test_the_list_filters_by_the_roots_reference(two_reviews):
    alices, _ = two_reviews

    found = manager().get("/api/tasks/", {"reference": "O-ALICE"}).json()["results"]

    assert [t["instance"] for t in found] == [str(child_of(alices).pk)]


def test_the_list_filters_by_the_root(two_reviews):
    _, bobs = two_reviews

    found = manager().get("/api/tasks/", {"root": str(bobs.pk)}).json()["results"]

    assert [t["owner_name"] for t in found] == ["bob"]


def test_the_list_filters_by_the_owner(two_reviews):
    alices, _ = two_reviews

    found = manager().get("/api/tasks/", {"owner": alices.owner_id}).json()["results"]

    assert [t["root"]["reference"] for t in found] == ["O-ALICE"]


def test_the_list_filters_by_an_own_reference():
    claim_at_approval(UserFactory(username="ann"), reference="E-2026-0001")
    claim_at_approval(UserFactory(username="ben"), reference="E-2026-0002")

    found = manager().get("/api/tasks/", {"reference": "E-2026-0002"}).json()["results"]

    assert [t["owner_name"] for t in found] == ["ben"]


def test_a_malformed_owner_or_root_answers_400():
    client = manager()

    assert client.get("/api/tasks/", {"owner": "alice"}).status_code == 400
    assert client.get("/api/tasks/", {"root": "not-an-id"}).status_code == 400


def test_the_filters_never_widen_your_tasks(two_reviews):
    alices, _ = two_reviews
    stranger = APIClient()
    stranger.force_authenticate(UserFactory(username="sam"))

    assert stranger.get("/api/tasks/", {"root": str(alices.pk)}).json()["count"] == 0


def test_a_page_of_nested_tasks_is_read_in_a_fixed_number_of_queries(
        two_reviews, django_assert_max_num_queries):
    client = manager()
    client.get("/api/tasks/")
    with CaptureQueriesContext(connection) as two:
        client.get("/api/tasks/")
    for owner in ("carol", "dave", "erin"):
        onboarding_of(UserFactory(username=owner))

    with django_assert_max_num_queries(len(two)):
        body = client.get("/api/tasks/").json()

    assert body["count"] == 5


def test_the_schema_documents_the_fields_and_filters():
    client = APIClient()
    client.force_authenticate(UserFactory(username="reader"))
    schema = json.loads(client.get("/api/schema/", {"format": "json"}).content)
    components = schema["components"]["schemas"]
    task = components["Task"]["properties"]
    root = components[task["root"]["allOf"][0]["$ref"].rsplit("/", 1)[1]] \
        if "allOf" in task["root"] else components[task["root"]["$ref"].rsplit("/", 1)[1]]
    filters = {p["name"] for p in schema["paths"]["/api/tasks/"]["get"]["parameters"]}

    assert {"reference", "owner", "owner_name", "root"} <= set(task)
    assert set(root["properties"]) == {"id", "workflow", "reference"}
    assert {"reference", "owner", "root"} <= filters
