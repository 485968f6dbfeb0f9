"""``POST /api/tasks/<id>/complete/`` when the task's ``merge`` raises: the failure is
recorded as a raising hook's is (200, the instance ``failed`` with the message), never a
500; what the merge wrote is rolled back and the task stays open."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from django_workflows import Step, Task, Transition, Workflow, registry, services
from django_workflows.models import WorkflowEvent, WorkflowInstance, WorkflowTask
from tests.factories import UserFactory
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db

FORM = {"type": "object", "required": ["decision"],
        "properties": {"decision": {"enum": ["approved", "rejected"]}}}


def merge_into_a_closed_ledger(state: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    Note.objects.create(text="written by the merge")
    raise RuntimeError("The ledger is closed")


@pytest.fixture
def ledger():
    definition = Workflow(
        id="closed-ledger", steps=[
            Step("claim"),
            Step("decision", task=Task(FORM, candidates=["group:managers"],
                                       merge=merge_into_a_closed_ledger)),
            Step("paid")],
        transitions=[Transition("claim", "decision"), Transition("decision", "paid")])
    registry.register(definition, origin=__name__)
    yield definition
    registry.unregister(definition.id)


@pytest.fixture
def manager(db):
    user = UserFactory(username="mo")
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    client = APIClient()
    client.force_authenticate(user)
    return client


def at_decision() -> WorkflowInstance:
    return services.next(services.create("closed-ledger", owner=UserFactory(), start=True))


def complete_url(instance: WorkflowInstance) -> str:
    task = WorkflowTask.objects.get(instance=instance, status="open")
    return f"/api/tasks/{task.pk}/complete/"


def test_a_raising_merge_answers_the_failed_instance_not_a_500(ledger, manager):
    instance = at_decision()

    response = manager.post(complete_url(instance), {"input": {"decision": "approved"}},
                            format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["instance"]["status"], body["instance"]["errors"],
            body["instance"]["current_step"]) == ("failed", ["The ledger is closed"], "decision")
    assert body["task"]["status"] == "open"


def test_a_raising_merge_is_recorded_and_its_writes_rolled_back(ledger, manager):
    instance = at_decision()

    manager.post(complete_url(instance), {"input": {"decision": "approved"}}, format="json")

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.status, row.errors) == ("failed", ["The ledger is closed"])
    last = WorkflowEvent.objects.filter(instance=instance).order_by("sequence").last()
    assert (last.type, last.step, last.error) == ("error", "decision", "The ledger is closed")
    assert not Note.objects.exists()
    assert WorkflowTask.objects.get(instance=instance).status == "open"
