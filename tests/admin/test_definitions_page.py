"""The definitions page: every registered workflow, its counts and its diagram."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from django_workflows import registry, services
from tests.factories import WorkflowInstanceFactory

from .conftest import logged_in

pytestmark = pytest.mark.django_db

DEFINITIONS = "admin:django_workflows_workflowinstance_definitions"


def row_of(content: str, workflow: str) -> list[str]:
    row = re.search(rf'<tr data-workflow="{workflow}">(.*?)</tr>', content, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                         row, re.S)]


def test_definitions_page_lists_every_registered_workflow(root_client):
    content = root_client.get(reverse(DEFINITIONS)).content.decode()

    listed = re.findall(r'<tr data-workflow="([^"]+)">', content)
    assert sorted(listed) == sorted(d.id for d in registry.all_definitions())


def test_definitions_page_shows_id_version_title_and_step_count(root_client):
    content = root_client.get(reverse(DEFINITIONS)).content.decode()

    assert row_of(content, "admin-fragile")[:4] == ["admin-fragile", "1", "Import a feed", "3"]


def test_definitions_page_counts_active_instances_by_status(
        root_client, django_capture_on_commit_callbacks):
    WorkflowInstanceFactory(workflow="admin-fragile")  # idle: not counted
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            WorkflowInstanceFactory(workflow="admin-fragile", started=True)  # fails
    with django_capture_on_commit_callbacks(execute=True):
        retried = services.create("admin-fragile", start=True)
    with django_capture_on_commit_callbacks(execute=True):
        services.retry(retried)  # runs again, succeeds: running at "review"

    content = root_client.get(reverse(DEFINITIONS)).content.decode()

    headers = re.findall(r"<th>(.*?)</th>", content)
    assert headers[4:8] == ["Running", "Blocked", "Failed", "Rolling back"]
    assert row_of(content, "admin-fragile")[4:8] == ["1", "0", "2", "0"]


def test_definitions_page_links_counts_to_the_filtered_changelist(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        WorkflowInstanceFactory(workflow="admin-fragile", started=True)

    content = root_client.get(reverse(DEFINITIONS)).content.decode()

    assert "?workflow=admin-fragile&amp;status__exact=failed" in content


def test_definitions_page_draws_each_definition(root_client):
    content = root_client.get(reverse(DEFINITIONS)).content.decode()

    section = re.search(r'<section class="module dwf-definition" id="workflow-admin-fragile">'
                        r"(.*?)</section>", content, re.S).group(1)
    assert re.findall(r'data-step="([^"]+)"', section) == ["fetch", "review", "publish"]
    assert content.count('<svg xmlns="http://www.w3.org/2000/svg" class="dwf-diagram"') == len(
        list(registry.all_definitions()))


def test_definitions_page_says_where_a_workflow_is_nested(root_client):
    content = root_client.get(reverse(DEFINITIONS)).content.decode()

    assert "nested in parent.check" in row_of(content, "child-check")[2]


def test_definitions_page_is_open_to_viewers(viewer):
    assert logged_in(viewer).get(reverse(DEFINITIONS)).status_code == 200


def test_definitions_page_is_forbidden_to_staff_without_permissions(outsider):
    assert logged_in(outsider).get(reverse(DEFINITIONS)).status_code == 403
