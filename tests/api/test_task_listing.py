"""Which tasks the API lists: ``GET /api/tasks/`` is your tasks, which its filters only
narrow; ``GET /api/instances/<id>/tasks/`` is every task of an instance you may see."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from django_workflows import services
from django_workflows.models import WorkflowTask
from tests.api.conftest import url, with_permission
from tests.factories import UserFactory

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]


def member(name: str, group: str = "managers"):
    user = UserFactory(username=name)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return type(user).objects.get(pk=user.pk)  # a fresh object: its groups as they are now


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def claim_of(owner):
    """A claim of ``owner``'s, waiting for a manager's decision."""
    return services.next(services.create("approval", owner=owner, start=True))


def open_task(instance) -> WorkflowTask:
    return WorkflowTask.objects.get(instance=instance, status="open")


def decide(user, instance, decision: str = "approved") -> None:
    services.complete(instance, input={"decision": decision}, user=user)


def listed(client, **query) -> list[str]:
    """The ids of the tasks ``GET /api/tasks/`` lists with ``query``."""
    return [task["id"] for task in client.get("/api/tasks/", query).json()["results"]]


@pytest.fixture
def ann(db):
    return UserFactory(username="ann")


@pytest.fixture
def claim(ann):
    return claim_of(ann)


# -- GET /api/tasks/: filters narrow, never widen -------------------------------------------


def test_naming_an_instance_narrows_a_managers_inbox_to_its_open_task(claim):
    other = claim_of(UserFactory(username="bo"))
    mo = client_of(member("mo"))

    assert listed(mo, instance=str(claim.pk)) == [str(open_task(claim).pk)]
    assert len(listed(mo)) == 2 and str(open_task(other).pk) in listed(mo)


def test_naming_an_instance_lists_no_closed_task_unless_the_status_asks_for_it(claim):
    mo = member("mo")
    task = open_task(claim)
    decide(mo, claim)

    assert listed(client_of(mo), instance=str(claim.pk)) == []
    assert listed(client_of(mo), instance=str(claim.pk), status="done") == [str(task.pk)]


def test_the_owner_does_not_see_her_own_claims_task_as_one_to_do_whatever_the_filters(claim):
    owner = client_of(claim.owner)
    decide(member("mo"), claim)

    for query in ({"instance": str(claim.pk)}, {"instance": str(claim.pk), "status": "all"},
                  {"status": "done"}, {"workflow": "approval", "status": "all"}):
        assert listed(owner, **query) == [], query


def test_status_done_lists_only_the_tasks_you_decided_not_every_decided_task(claim):
    mo, max_ = member("mo"), member("max")
    decide(mo, claim)

    assert len(listed(client_of(mo), status="done")) == 1
    assert listed(client_of(max_), status="done") == []


def test_seeing_every_instance_does_not_put_others_decisions_in_your_list(claim):
    decide(member("mo"), claim)
    viewer = with_permission("view_workflowinstance", username="viewer")
    root = UserFactory(username="root", superuser=True)

    assert listed(client_of(viewer), status="all") == []
    assert listed(client_of(root), status="done") == []


def test_status_cancelled_lists_the_tasks_you_claimed_that_were_cancelled(claim):
    mo = member("mo")
    task = open_task(claim)
    services.claim(claim, user=mo)
    services.cancel(claim, user=claim.owner)

    assert listed(client_of(mo), status="cancelled") == [str(task.pk)]
    assert listed(client_of(member("max")), status="cancelled") == []


def test_status_all_lists_your_inbox_and_the_tasks_you_decided(claim):
    mo = member("mo")
    decided = open_task(claim)
    decide(mo, claim)
    waiting = open_task(claim_of(UserFactory(username="bo")))

    assert sorted(listed(client_of(mo), status="all")) == sorted([str(decided.pk),
                                                                   str(waiting.pk)])


def test_the_filters_and_the_statuses_are_documented_as_narrowing_your_list():
    client = client_of(UserFactory())
    operation = client.get("/api/schema/", {"format": "json"}).json()[
        "paths"]["/api/tasks/"]["get"]

    parameters = {p["name"]: p["description"] for p in operation["parameters"]}
    assert "the tasks you may act on" in parameters["status"]
    assert "/api/instances/{id}/tasks/" in parameters["instance"]


# -- GET /api/instances/<id>/tasks/: every task of an instance you may see -----------------


def test_the_owner_reads_every_task_of_her_instance_oldest_first_whatever_its_status(claim):
    mo = member("mo")
    first = open_task(claim)
    services.claim(claim, user=mo)
    services.back(claim, user=claim.owner)  # cancels the task; next opens a new one
    services.next(claim, user=claim.owner)
    second = open_task(claim)

    body = client_of(claim.owner).get(url(claim, "tasks")).json()

    assert body["count"] == 2
    assert [(t["id"], t["status"]) for t in body["results"]] == [
        (str(first.pk), "cancelled"), (str(second.pk), "open")]
    assert body["results"][0]["claimed_by"] == mo.pk


def test_an_instances_tasks_are_paginated_as_its_events_are(claim):
    services.back(claim, user=claim.owner)
    services.next(claim, user=claim.owner)

    page = client_of(claim.owner).get(url(claim, "tasks"), {"page_size": 1, "page": 2}).json()

    assert (page["count"], len(page["results"]), page["next"]) == (2, 1, None)
    assert page["results"][0]["status"] == "open"


def test_a_candidate_reads_the_tasks_of_the_instance_whose_task_they_may_act_on(claim):
    response = client_of(member("mo")).get(url(claim, "tasks"))

    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_the_tasks_of_an_instance_you_may_not_see_answer_404(claim):
    stranger = client_of(UserFactory(username="sam"))

    response = stranger.get(url(claim, "tasks"))

    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_the_tasks_of_no_instance_answer_404():
    response = client_of(UserFactory()).get(
        url("00000000-0000-4000-8000-000000000000", "tasks"))

    assert response.status_code == 404


def test_the_schema_documents_an_instances_tasks():
    client = client_of(UserFactory())
    paths = client.get("/api/schema/", {"format": "json"}).json()["paths"]

    operation = paths["/api/instances/{id}/tasks/"]["get"]
    assert {"200", "404"} <= set(operation["responses"])
    item = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert item["$ref"].endswith("/PaginatedTaskList")
