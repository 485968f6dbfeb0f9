"""The API's task says what is being decided: ``shows``, from ``Task(show=...)``."""

from __future__ import annotations

import json
import logging

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from django_workflows import services
from django_workflows.models import WorkflowTask
from tests.factories import UserFactory
from tests.task_shows import claim_at_approval, shown_workflows  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db,
              pytest.mark.usefixtures("shown_workflows")]


def manager(name: str = "mo") -> APIClient:
    user = UserFactory(username=name)
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    client = APIClient()
    client.force_authenticate(user)
    return client


def task_of(instance) -> str:
    return f"/api/tasks/{WorkflowTask.objects.get(instance=instance, status='open').pk}/"


def test_the_task_shows_the_claims_values_with_labels():
    instance = claim_at_approval(UserFactory(username="ann"))

    task = manager().get(task_of(instance)).json()

    assert task["shows"] == [
        {"label": "Amount spent", "value": 120.5, "link": None, "problem": None},
        {"label": "Currency", "value": "EUR", "link": None, "problem": None},
        {"label": "Description", "value": "Train to Lyon <script>x()</script>", "link": None,
         "problem": None},
        {"label": "Receipt", "value": "https://files.example.com/receipts/1.pdf",
         "link": "https://files.example.com/receipts/1.pdf", "problem": None},
        {"label": "Iban", "value": None, "link": None, "problem": "missing"}]


def test_the_inbox_lists_each_task_with_what_it_shows():
    claim_at_approval(UserFactory(username="ann"))

    [task] = manager().get("/api/tasks/").json()["results"]

    assert [line["label"] for line in task["shows"]] == [
        "Amount spent", "Currency", "Description", "Receipt", "Iban"]


def test_a_javascript_url_is_no_link():
    instance = claim_at_approval(UserFactory(username="ann"), receipt="javascript:alert(1)")

    shows = manager().get(task_of(instance)).json()["shows"]

    assert {"label": "Receipt", "value": "javascript:alert(1)", "link": None,
            "problem": None} in shows


def test_a_show_hook_that_raises_is_an_error_line_not_a_500(caplog):
    instance = services.create("shown-hook", owner=UserFactory(username="ann"), start=True,
                               state={"who": "alice", "fail": True})

    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        response = manager().get(task_of(instance))

    assert response.status_code == 200
    assert response.json()["shows"] == [
        {"label": "Could not be shown", "value": None, "link": None, "problem": "error"}]
    assert any("the show broke" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_completing_answers_the_task_with_what_it_shows():
    instance = claim_at_approval(UserFactory(username="ann"))

    body = manager().post(task_of(instance) + "complete/", {"input": {"decision": "approved"}},
                          format="json").json()

    assert body["task"]["status"] == "done"
    assert body["task"]["shows"][0] == {"label": "Amount spent", "value": 120.5, "link": None,
                                        "problem": None}


def test_the_schema_documents_shows(django_db_blocker):
    client = APIClient()
    client.force_authenticate(UserFactory(username="reader"))
    schema = json.loads(client.get("/api/schema/", {"format": "json"}).content)
    components = schema["components"]["schemas"]

    shows = components["Task"]["properties"]["shows"]
    line = components[shows["items"]["$ref"].rsplit("/", 1)[1]]

    assert shows["type"] == "array" and shows["readOnly"] is True
    assert set(line["properties"]) == {"label", "value", "link", "problem"}
    assert line["properties"]["link"]["nullable"] is True
