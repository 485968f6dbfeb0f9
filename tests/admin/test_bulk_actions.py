"""Commands as changelist actions: each instance through the service, refusals as messages."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

from django_workflows import services
from django_workflows.models import WorkflowInstance
from tests.factories import WorkflowInstanceFactory

from .conftest import changelist_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db


def statuses(*instances) -> list[tuple[str, str]]:
    rows = {row.pk: row for row in WorkflowInstance.objects.filter(
        pk__in=[i.pk for i in instances])}
    return [(rows[i.pk].status, rows[i.pk].current_step) for i in instances]


def bulk(client, name, *instances, **extra):
    response = client.post(changelist_url(), {
        "action": f"{name}_selected", "_selected_action": [str(i.pk) for i in instances],
        "index": "0", **extra}, follow=True)
    assert response.status_code == 200
    return response


def test_bulk_start_starts_every_selected_instance(root_client):
    first, second = WorkflowInstanceFactory(), WorkflowInstanceFactory()

    response = bulk(root_client, "start", first, second)

    assert statuses(first, second) == [("running", "account")] * 2
    assert shown_messages(response) == [("success", "Start: 2 instances moved.")]


def test_bulk_next_moves_every_selected_instance(root_client):
    instances = [WorkflowInstanceFactory(workflow="admin-undo", started=True) for _ in range(3)]

    bulk(root_client, "next", *instances)

    assert statuses(*instances) == [("running", "send")] * 3


def test_bulk_back_moves_every_selected_instance_back(root_client):
    instances = [WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
                 for _ in range(2)]

    bulk(root_client, "back", *instances)

    assert statuses(*instances) == [("running", "draft")] * 2


def test_bulk_skip_skips_the_current_steps(root_client):
    instances = [WorkflowInstanceFactory(workflow="admin-undo", started=True) for _ in range(2)]

    bulk(root_client, "skip", *instances)

    assert statuses(*instances) == [("running", "send")] * 2


def test_bulk_retry_runs_failed_work_again(root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instances = [services.create("admin-fragile", start=True) for _ in range(2)]

    with django_capture_on_commit_callbacks(execute=True):
        bulk(root_client, "retry", *instances)

    assert statuses(*instances) == [("running", "review")] * 2


def test_bulk_cancel_cancels_every_selected_instance(root_client):
    instances = [WorkflowInstanceFactory(started=True) for _ in range(2)]

    bulk(root_client, "cancel", *instances, post="yes")  # "Yes, I'm sure" (it asks first)

    assert [status for status, _ in statuses(*instances)] == ["cancelled"] * 2


def test_bulk_rollback_undoes_every_selected_instance(root_client,
                                                      django_capture_on_commit_callbacks):
    instances = [WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
                 for _ in range(2)]

    with django_capture_on_commit_callbacks(execute=True):
        bulk(root_client, "rollback", *instances, post="yes")  # "Yes, I'm sure"

    assert statuses(*instances) == [("idle", "")] * 2


def test_bulk_action_reports_each_refusal_and_counts_the_moved(root_client):
    idle = WorkflowInstanceFactory()
    running = WorkflowInstanceFactory(started=True)

    response = bulk(root_client, "start", idle, running)

    messages = shown_messages(response)
    assert ("success", "Start: 1 instance moved.") in messages
    [(level, text)] = [m for m in messages if m[0] != "success"]
    assert level == "warning"
    assert text.startswith(f"Wizard {str(running.pk)[:8]}…: Start refused: ")  # capfirst


def test_bulk_action_can_act_on_every_instance_the_filters_select(root_client):
    idle = [WorkflowInstanceFactory() for _ in range(3)]
    WorkflowInstanceFactory(workflow="admin-undo")

    response = root_client.post(changelist_url() + "?workflow=wizard", {
        "action": "start_selected", "select_across": "1", "index": "0",
        "_selected_action": [str(idle[0].pk)]}, follow=True)

    assert ("success", "Start: 3 instances moved.") in shown_messages(response)
    assert WorkflowInstance.objects.filter(workflow="admin-undo", status="idle").count() == 1


def test_bulk_action_refuses_more_instances_than_its_limit(root_client):
    instances = [WorkflowInstanceFactory() for _ in range(3)]

    with override_settings(DJANGO_WORKFLOWS={**settings.DJANGO_WORKFLOWS,
                                             "ADMIN_BULK_LIMIT": 2}):
        response = bulk(root_client, "start", *instances)

    assert shown_messages(response) == [
        ("error", "Start: select at most 2 instances at once; nothing was done.")]
    assert [status for status, _ in statuses(*instances)] == ["idle"] * 3


def test_bulk_action_applies_the_definitions_rule_to_each_instance(clerk):
    guarded = WorkflowInstanceFactory(workflow="admin-guarded")
    wizard = WorkflowInstanceFactory()

    response = bulk(logged_in(clerk), "start", guarded, wizard)

    assert statuses(guarded, wizard) == [("idle", ""), ("running", "account")]
    assert any("does not allow you to start" in text for _, text in shown_messages(response))


def test_bulk_actions_are_not_run_for_a_viewer(viewer):
    instance = WorkflowInstanceFactory()

    response = bulk(logged_in(viewer), "start", instance)

    assert statuses(instance) == [("idle", "")]
    assert shown_messages(response) == []  # a viewer has no actions: the post is ignored


def test_bulk_action_with_nothing_selected_says_so(root_client):
    WorkflowInstanceFactory()

    response = bulk(root_client, "start")

    assert shown_messages(response) == [(
        "warning", "Items must be selected in order to perform actions on them. No items have "
                   "been changed.")]
