"""Adding an instance: a form whose save is ``services.create``."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse

from django_workflows.models import WorkflowEvent, WorkflowInstance

from .conftest import instance_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db

ADD = "admin:django_workflows_workflowinstance_add"


def add(client, workflow, state="", start=False):
    data = {"workflow": workflow, "state": state if isinstance(state, str) else json.dumps(state)}
    if start:
        data["start"] = "on"
    return client.post(reverse(ADD), data)


def test_add_page_offers_every_registered_workflow(root_client):
    content = root_client.get(reverse(ADD)).content.decode()

    assert '<option value="admin-fragile">Import a feed (admin-fragile, version 1)</option>' \
        in content
    assert 'name="state"' in content and 'name="start"' in content


def test_adding_creates_an_idle_instance_with_the_initial_state(superuser, root_client):
    response = add(root_client, "wizard")

    instance = WorkflowInstance.objects.get()
    assert response.status_code == 302 and response["Location"] == instance_url(instance)
    assert (instance.status, instance.state, instance.owner) == (
        "idle", {"email": "", "plan": None}, superuser)
    assert shown_messages(root_client.get(response["Location"]))[0][0] == "success"


def test_adding_with_a_state_and_start_starts_it(root_client):
    add(root_client, "wizard", {"email": "ann@example.com", "plan": None}, start=True)

    instance = WorkflowInstance.objects.get()
    assert (instance.status, instance.current_step, instance.state["email"]) == (
        "running", "account", "ann@example.com")
    assert set(WorkflowEvent.objects.filter(instance=instance).values_list(
        "actor__username", flat=True)) == {"root"}


def test_adding_with_a_state_that_breaks_the_schema_shows_why(root_client):
    response = add(root_client, "wizard", {"plan": "gold"})

    assert response.status_code == 200
    assert "plan: &#x27;gold&#x27; is not one of" in response.content.decode()
    assert not WorkflowInstance.objects.exists()


def test_adding_with_a_state_that_breaks_the_schema_shows_each_error_once(root_client):
    response = add(root_client, "wizard", {"plan": "gold", "email": 3})

    content = response.content.decode()
    assert content.count("plan: &#x27;gold&#x27; is not one of") == 1
    assert content.count("email: 3 is not of type") == 1


def test_adding_with_a_state_that_is_not_json_shows_why(root_client):
    response = add(root_client, "wizard", "{nope")

    assert "Enter valid JSON" in response.content.decode()
    assert not WorkflowInstance.objects.exists()


def test_adding_with_a_state_over_the_size_limit_shows_why(root_client):
    with override_settings(DJANGO_WORKFLOWS={**settings.DJANGO_WORKFLOWS,
                                             "MAX_STATE_BYTES": 32}):
        response = add(root_client, "wizard", {"email": "a" * 64})

    assert "the limit is 32 bytes" in response.content.decode()
    assert not WorkflowInstance.objects.exists()


@pytest.mark.parametrize(("number", "why"), [
    ("9" * 5000, "5000 digits"), ("1e999", "out of range"), ("NaN", "NaN is not valid JSON"),
    ("-Infinity", "Infinity is not valid JSON"),
])
def test_adding_with_a_number_json_cannot_carry_shows_why(root_client, number, why):
    response = add(root_client, "wizard", '{"email": "", "plan": null, "n": NUMBER}'.replace(
        "NUMBER", number))

    assert response.status_code == 200
    assert why in response.content.decode()
    assert not WorkflowInstance.objects.exists()


def test_adding_an_unknown_workflow_is_refused_by_the_form(root_client):
    response = add(root_client, "nope")

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()


def test_adding_refused_by_the_definitions_rule_shows_why(clerk):
    response = add(logged_in(clerk), "admin-guarded")

    assert response.status_code == 200
    assert "does not allow you to create instances" in response.content.decode()
    assert not WorkflowInstance.objects.exists()


def test_add_page_is_forbidden_without_the_add_permission(viewer):
    assert logged_in(viewer).get(reverse(ADD)).status_code == 403
    assert add(logged_in(viewer), "wizard").status_code == 403
    assert not WorkflowInstance.objects.exists()
