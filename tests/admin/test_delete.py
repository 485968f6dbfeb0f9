"""Deleting instances: a whole tree from its root, never a nested child alone."""

from __future__ import annotations

import pytest
from django.urls import reverse

from django_workflows.models import WorkflowInstance
from tests.factories import WorkflowInstanceFactory

from .conftest import changelist_url

pytestmark = pytest.mark.django_db


def delete_url(instance) -> str:
    return reverse("admin:django_workflows_workflowinstance_delete", args=[instance.pk])


def test_deleting_an_instance_deletes_it_and_its_children(root_client):
    parent = WorkflowInstanceFactory(workflow="parent", started=True, commands=["next"])

    response = root_client.post(delete_url(parent), {"post": "yes"})

    assert response.status_code == 302
    assert not WorkflowInstance.objects.exists()


def test_a_nested_child_cannot_be_deleted_alone(root_client):
    parent = WorkflowInstanceFactory(workflow="parent", started=True, commands=["next"])
    child = WorkflowInstance.objects.get(parent=parent)

    response = root_client.post(delete_url(child), {"post": "yes"})

    assert response.status_code == 200
    assert f"is nested in instance {parent.pk}: delete that one instead" in \
        response.content.decode()
    assert WorkflowInstance.objects.filter(pk=child.pk).exists()


def test_bulk_delete_of_a_nested_child_alone_is_refused(root_client):
    parent = WorkflowInstanceFactory(workflow="parent", started=True, commands=["next"])
    child = WorkflowInstance.objects.get(parent=parent)

    response = root_client.post(changelist_url(), {
        "action": "delete_selected", "_selected_action": [str(child.pk)], "index": "0",
        "post": "yes"})

    assert response.status_code == 200
    assert WorkflowInstance.objects.count() == 2
