"""The task endpoints of DESIGN.md §4: the inbox, one task, claim, release, complete."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from django_workflows import services
from django_workflows.models import WorkflowInstance, WorkflowTask
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TASK_FIELDS = {"id", "instance", "workflow", "step", "title", "form", "status", "candidates",
               "claimed_by", "completed_by", "input", "due_at", "overdue", "created_at",
               "completed_at", "shows", "reference", "owner", "owner_name", "root"}


def member(name: str, group: str = "managers"):
    user = UserFactory(username=name)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def claim(db):
    """Ann's expense claim, waiting for a manager's decision."""
    ann = UserFactory(username="ann")
    instance = services.create("approval", owner=ann, start=True)
    return services.next(instance, user=ann)


def task_url(claim, action: str = "") -> str:
    task = WorkflowTask.objects.get(instance=claim, status="open")
    return f"/api/tasks/{task.pk}/{action}/" if action else f"/api/tasks/{task.pk}/"


def test_the_inbox_lists_the_open_tasks_a_manager_may_act_on(claim):
    body = client_of(member("mo")).get("/api/tasks/").json()

    assert body["count"] == 1
    [task] = body["results"]
    assert set(task) == TASK_FIELDS
    assert (task["instance"], task["step"], task["status"], task["candidates"]) == (
        str(claim.pk), "decision", "open", ["group:managers"])
    assert task["form"]["properties"]["decision"]["enum"] == ["approved", "rejected"]


def test_the_owner_finds_no_task_to_do_not_even_by_naming_the_instance(claim):
    owner = client_of(claim.owner)

    assert owner.get("/api/tasks/").json()["count"] == 0
    assert owner.get("/api/tasks/", {"instance": str(claim.pk)}).json()["count"] == 0


def test_a_stranger_sees_no_task_at_all(claim):
    stranger = client_of(UserFactory(username="sam"))

    assert stranger.get("/api/tasks/", {"instance": str(claim.pk)}).json()["count"] == 0
    assert stranger.get(task_url(claim)).status_code == 404


def test_complete_answers_the_task_and_the_moved_instance(claim):
    mo = member("mo")

    response = client_of(mo).post(task_url(claim, "complete"),
                                  {"input": {"decision": "approved"}}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["task"]["status"], body["task"]["completed_by"]) == ("done", mo.pk)
    assert body["instance"]["current_step"] == "paid"
    assert response["ETag"] == f'"{body["instance"]["revision"]}"'


def test_input_that_breaks_the_form_answers_400_naming_each_field(claim):
    response = client_of(member("mo")).post(task_url(claim, "complete"),
                                            {"input": {"decision": "maybe"}}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_input"
    assert "input.decision" in response.json()["fields"]
    assert WorkflowTask.objects.get(instance=claim).status == "open"


def test_someone_who_is_no_candidate_gets_403(claim):
    watcher = UserFactory(username="viewer", permissions=["view_workflowinstance"])

    response = client_of(watcher).post(task_url(claim, "complete"),
                                       {"input": {"decision": "approved"}}, format="json")

    assert (response.status_code, response.json()["code"]) == (403, "permission_denied")


def test_the_claimant_may_not_decide_their_own_claim(claim):
    claim.owner.groups.add(Group.objects.get_or_create(name="managers")[0])

    response = client_of(type(claim.owner).objects.get(pk=claim.owner_id)).post(
        task_url(claim, "complete"), {"input": {"decision": "approved"}}, format="json")

    assert response.status_code == 403
    assert WorkflowInstance.objects.get(pk=claim.pk).current_step == "decision"


def test_a_task_claimed_by_someone_else_answers_409(claim):
    url = task_url(claim, "complete")
    assert client_of(member("mo")).post(task_url(claim, "claim")).json()["claimed_by"]

    response = client_of(member("max")).post(url, {"input": {"decision": "approved"}},
                                             format="json")

    assert (response.status_code, response.json()["code"]) == (409, "task_claimed")


def test_a_closed_task_answers_409(claim):
    url = task_url(claim, "complete")
    mo = client_of(member("mo"))
    mo.post(url, {"input": {"decision": "approved"}}, format="json")

    again = mo.post(url, {"input": {"decision": "rejected"}}, format="json")

    assert again.status_code == 409
    assert again.json()["code"] in ("task_closed", "no_task")


def test_release_gives_the_task_back(claim):
    mo = client_of(member("mo"))
    mo.post(task_url(claim, "claim"))

    response = mo.post(task_url(claim, "release"))

    assert (response.status_code, response.json()["claimed_by"]) == (200, None)


def test_a_stale_if_match_answers_412_and_changes_nothing(claim):
    response = client_of(member("mo")).post(task_url(claim, "complete"),
                                            {"input": {"decision": "approved"}}, format="json",
                                            HTTP_IF_MATCH=f'"{claim.revision - 1}"')

    assert response.status_code == 412
    assert WorkflowTask.objects.get(instance=claim).status == "open"


def test_assigned_me_lists_the_tasks_you_claimed(claim):
    mo, max_ = client_of(member("mo")), client_of(member("max"))
    mo.post(task_url(claim, "claim"))

    assert mo.get("/api/tasks/", {"assigned": "me"}).json()["count"] == 1
    assert max_.get("/api/tasks/", {"assigned": "me"}).json()["count"] == 0


def test_status_done_lists_the_tasks_you_decided(claim):
    mo = client_of(member("mo"))
    mo.post(task_url(claim, "complete"), {"input": {"decision": "approved"}}, format="json")

    done = mo.get("/api/tasks/", {"status": "done"}).json()["results"]

    assert [(task["status"], task["input"]) for task in done] == [
        ("done", {"decision": "approved"})]


def test_an_unknown_task_answers_a_json_404():
    response = client_of(UserFactory()).get(
        "/api/tasks/00000000-0000-4000-8000-000000000000/")

    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_the_schema_documents_the_task_endpoints():
    import io
    import json

    from django.core.management import call_command

    out = io.StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out)
    paths = json.loads(out.getvalue())["paths"]

    assert {"/api/tasks/", "/api/tasks/{id}/", "/api/tasks/{id}/claim/",
            "/api/tasks/{id}/release/", "/api/tasks/{id}/complete/"} <= set(paths)
    assert "400" in paths["/api/tasks/{id}/complete/"]["post"]["responses"]
