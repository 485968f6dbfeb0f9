"""Commands from the instance page: each through the service, refusals as messages."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

from django_workflows import services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.factories import UserFactory, WorkflowInstanceFactory
from tests.testapp.models import Note

from .conftest import instance_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db


def reload(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def act(client, instance, name, *, revision=None, **fields):
    """Press a command button on the instance page; the page it redirects to."""
    revision = reload(instance).revision if revision is None else revision
    response = client.post(instance_url(instance),
                           {"_command": name, "revision": revision, **fields}, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain == [(instance_url(instance), 302)]
    return response


def with_email(**options):
    return WorkflowInstanceFactory(state={"email": "ann@example.org", "plan": None},
                                   started=True, **options)


def test_start_starts_an_idle_instance(root_client):
    instance = WorkflowInstanceFactory()

    response = act(root_client, instance, "start")

    assert (reload(instance).status, reload(instance).current_step) == ("running", "account")
    assert shown_messages(response) == [
        ("success", 'Start: done; the instance is now running at step "account".')]


def test_next_moves_the_instance_on(root_client):
    instance = with_email()

    response = act(root_client, instance, "next")

    assert reload(instance).current_step == "confirm"
    assert shown_messages(response) == [
        ("success", 'Next: done; the instance is now running at step "confirm".')]


def test_next_refused_by_validation_is_shown_as_a_warning(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = act(root_client, instance, "next")

    assert shown_messages(response) == [("warning", "Next refused: Email is required")]
    assert reload(instance).status == "blocked"


def test_back_returns_to_the_previous_step(root_client):
    instance = with_email(commands=["next"])

    act(root_client, instance, "back")

    assert reload(instance).current_step == "account"


def test_back_on_the_first_step_is_refused_with_a_message(root_client):
    instance = WorkflowInstanceFactory(started=True)
    before = reload(instance).revision

    response = act(root_client, instance, "back")

    [(level, text)] = shown_messages(response)
    assert level == "warning" and text.startswith("Back refused: ")
    assert reload(instance).revision == before


def test_skip_records_the_step_skipped(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-undo", started=True)

    act(root_client, instance, "skip")

    assert reload(instance).skipped_steps == ["draft"]
    assert reload(instance).current_step == "send"


def test_retry_runs_the_failed_work_again(root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("admin-fragile", start=True)
    assert reload(instance).status == "failed"

    with django_capture_on_commit_callbacks(execute=True):
        response = act(root_client, instance, "retry")

    assert (reload(instance).status, reload(instance).current_step) == ("running", "review")
    [(level, text)] = shown_messages(response)
    assert level == "success" and text.startswith("Retry: done; the instance is now running")


def test_retry_of_a_running_instance_is_refused_with_a_message(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = act(root_client, instance, "retry")

    [(level, text)] = shown_messages(response)
    assert level == "warning" and text.startswith("Retry refused: ")


def test_cancel_cancels_the_instance(root_client):
    instance = WorkflowInstanceFactory(started=True)

    act(root_client, instance, "cancel")

    assert reload(instance).status == "cancelled"


def test_cancel_records_the_reason_typed_beside_the_button(root_client):
    instance = WorkflowInstanceFactory(started=True)
    assert 'name="cancel-reason"' in root_client.get(instance_url(instance)).content.decode()

    act(root_client, instance, "cancel", **{"cancel-reason": "  The customer called  "})

    event = WorkflowEvent.objects.get(instance=instance, type="cancel")
    assert event.data == {"reason": "The customer called"}


def test_a_queued_operation_is_skipped_from_its_row(root_client):
    instance = services.create("admin-slow", start=True)  # queued: no worker runs it here
    content = root_client.get(instance_url(instance)).content.decode()
    assert 'value="skip_operation"' in content

    act(root_client, instance, "skip_operation", **{"skip_operation-operation": "count"})

    row = reload(instance)
    assert [(op["id"], op["status"]) for op in row.operations] == [("count", "skipped")]
    assert row.current_step == "done"  # the auto step went on without it


def test_cancel_of_a_cancelled_instance_is_refused_with_a_message(root_client):
    instance = WorkflowInstanceFactory(started=True, commands=["cancel"])

    response = act(root_client, instance, "cancel")

    [(level, text)] = shown_messages(response)
    assert level == "warning" and text.startswith("Cancel refused: ")


def test_rollback_undoes_the_completed_steps(root_client, django_capture_on_commit_callbacks):
    instance = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])

    with django_capture_on_commit_callbacks(execute=True):
        act(root_client, instance, "rollback")

    assert reload(instance).status == "idle"
    assert Note.objects.filter(text=f"undo {instance.pk}").count() == 1


def test_rollback_of_an_instance_never_started_is_refused_with_a_message(root_client):
    instance = WorkflowInstanceFactory()

    response = act(root_client, instance, "rollback")

    [(level, text)] = shown_messages(response)
    assert level == "warning" and text.startswith("Roll back refused: ")


def test_command_records_the_acting_user_on_its_events(operator):
    instance = with_email()

    act(logged_in(operator), instance, "next")

    actors = set(WorkflowEvent.objects.filter(instance=instance, revision=reload(instance)
                                              .revision).values_list("actor__username",
                                                                     flat=True))
    assert actors == {"operator"}


def test_command_is_written_to_the_admin_history(operator):
    instance = with_email()

    act(logged_in(operator), instance, "next")

    entry = LogEntry.objects.get(object_id=str(instance.pk))
    assert (entry.user.username, entry.get_change_message()) == (
        "operator", "Next (through the service layer).")


def test_command_from_a_stale_page_changes_nothing_and_says_so(root_client):
    instance = with_email()
    seen = reload(instance).revision
    services.update_state(instance, {"email": "bob@example.org", "plan": None})

    response = act(root_client, instance, "next", revision=seen)

    [(level, text)] = shown_messages(response)
    assert level == "warning" and "changed since the page was loaded" in text
    assert reload(instance).current_step == "account"


def test_unknown_command_is_reported(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = act(root_client, instance, "explode")

    assert shown_messages(response) == [("error", 'Unknown command "explode".')]


def test_command_on_an_instance_of_an_unregistered_workflow_is_a_message(root_client):
    instance = WorkflowInstanceFactory(started=True)
    WorkflowInstance.objects.filter(pk=instance.pk).update(workflow="gone")

    response = act(root_client, instance, "next")

    assert shown_messages(response) == [("error", 'Next failed: No workflow "gone" is registered')]
    assert "is not registered: no diagram" in response.content.decode()


def test_command_of_a_viewer_is_refused_and_changes_nothing(viewer):
    instance = with_email()
    before = reload(instance).revision

    response = act(logged_in(viewer), instance, "next")

    assert shown_messages(response) == [
        ("error", "Next: You do not have permission to change workflow instances.")]
    assert reload(instance).revision == before


def test_command_of_staff_without_permissions_is_forbidden(outsider):
    instance = with_email()

    response = logged_in(outsider).post(instance_url(instance), {"_command": "next"})

    assert response.status_code == 403
    assert reload(instance).current_step == "account"


def test_definitions_rule_refuses_a_user_with_the_change_permission(clerk):
    instance = WorkflowInstanceFactory(workflow="admin-guarded", started=True)

    response = act(logged_in(clerk), instance, "next")

    assert shown_messages(response) == [
        ("error", 'Next: The workflow "admin-guarded" does not allow you to next this '
                  "instance.")]
    assert reload(instance).current_step == "one"


def test_definitions_rule_binds_superusers_too():
    instance = WorkflowInstanceFactory(workflow="admin-guarded", started=True)
    boss = UserFactory(username="clerk-in-chief", superuser=True)

    act(logged_in(boss), instance, "next")

    assert reload(instance).current_step == "one"


def test_definitions_rule_lets_the_users_it_allows_act(operator):
    instance = WorkflowInstanceFactory(workflow="admin-guarded", started=True)

    act(logged_in(operator), instance, "next")

    assert reload(instance).current_step == "two"


def test_definitions_rule_that_raises_refuses(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-broken-rule", started=True)

    response = act(root_client, instance, "next")

    [(level, text)] = shown_messages(response)
    assert level == "error" and "does not allow you" in text
    assert reload(instance).current_step == "one"


def test_posting_engine_fields_changes_nothing(root_client):
    instance = WorkflowInstanceFactory(started=True)
    before = WorkflowInstance.objects.filter(pk=instance.pk).values().get()

    response = root_client.post(instance_url(instance), {
        "status": "completed", "current_step": "confirm", "revision": 99,
        "snapshot": "{}", "workflow": "long-manual", "_save": "Save"})

    assert response.status_code == 302
    assert WorkflowInstance.objects.filter(pk=instance.pk).values().get() == before
