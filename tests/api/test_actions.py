"""Commands over HTTP: 200 with the instance when it moved, 409 with a code when refused.

The ``wizard``: ``account`` (an email is required) -> ``plan`` (only for
``.com`` addresses) -> ``confirm``. Background work is never run here (the
test's transaction never commits), so queued work stays queued.
"""

from __future__ import annotations

import pytest

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]


def with_email(make_instance, email: str = "ann@example.com") -> WorkflowInstance:
    instance = make_instance(started=True)
    return services.update_state(instance, {"email": email, "plan": None})


def refusal(response) -> str:
    """The code of a 409, checking its body has exactly detail and code."""
    assert response.status_code == 409, response.content
    body = response.json()
    assert set(body) == {"detail", "code"} and body["detail"]
    return body["code"]


# -- each command moves ------------------------------------------------------------------


def test_start_answers_200_with_the_running_instance(api, make_instance):
    response = api.post(url(make_instance(), "start"))

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["current_step"]) == ("running", "account")


def test_next_moves_to_the_next_step(api, make_instance):
    response = api.post(url(with_email(make_instance), "next"))

    assert response.status_code == 200
    body = response.json()
    assert (body["current_step"], body["completed_steps"]) == ("plan", ["account"])


def test_back_returns_to_the_previous_step(api, make_instance):
    instance = with_email(make_instance)
    services.next(instance)

    response = api.post(url(instance, "back"))

    assert response.status_code == 200
    assert response.json()["current_step"] == "account"


def test_skip_records_the_step_skipped(api, make_instance):
    response = api.post(url(make_instance(started=True), "skip"))

    assert response.status_code == 200
    assert response.json()["skipped_steps"][0] == "account"


def test_validate_answers_200_when_the_step_is_valid(api, make_instance):
    response = api.post(url(with_email(make_instance), "validate"))

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["errors"]) == ("running", [])


def test_retry_runs_a_blocked_instance_again(api, make_instance):
    response = api.post(url(make_instance(blocked=True), "retry"))

    assert response.status_code == 200
    assert response.json()["status"] == "running"


def test_cancel_answers_the_cancelled_instance(api, make_instance):
    response = api.post(url(make_instance(started=True), "cancel"))

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.json()["completed_at"] is not None


def test_cancel_records_the_reason_given(api, make_instance):
    instance = make_instance(started=True)

    response = api.post(url(instance, "cancel"), {"reason": "Ordered twice"}, format="json")

    assert response.status_code == 200
    event = WorkflowEvent.objects.get(instance=instance, type="cancel")
    assert event.data == {"reason": "Ordered twice"}


def test_a_reason_that_is_not_text_answers_400_and_cancels_nothing(api, make_instance):
    instance = make_instance(started=True)

    response = api.post(url(instance, "cancel"), {"reason": {"why": 1}}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "reason" in response.json()["fields"]
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "running"


def test_skip_operation_skips_the_operation_named(api, make_instance):
    from tests.services.test_background import HOLDING, runner

    with runner(HOLDING):  # the operation stays queued
        instance = make_instance(workflow="back-office", started=True)

        response = api.post(url(instance, "skip_operation"), {"operation": "nope"},
                            format="json")
        assert (response.status_code, response.json()["code"]) == (409, "no_operation")
        first = instance.operations[0]["id"]
        response = api.post(url(instance, "skip_operation"), {"operation": first},
                            format="json")

    assert response.status_code == 200
    assert response.json()["operations"][0]["status"] == "skipped"


def test_rollback_starts_undoing_the_completed_steps(api, make_instance):
    instance = make_instance(workflow="compensated", started=True, commands=["next"])

    response = api.post(url(instance, "rollback"))

    assert response.status_code == 200
    assert response.json()["status"] == "rolling-back"


def test_a_command_answers_the_new_revision_as_etag(api, make_instance):
    instance = make_instance()

    response = api.post(url(instance, "start"))

    assert response["ETag"] == f'"{instance.revision + 1}"'


def test_a_command_records_the_requesting_user_on_its_events(api, owner, make_instance):
    instance = make_instance()

    api.post(url(instance, "start"))

    assert {e.actor for e in WorkflowEvent.objects.filter(instance=instance)} == {owner}


def test_a_command_accepts_an_empty_json_object_as_body(api, make_instance):
    response = api.post(url(make_instance(), "start"), {}, format="json")

    assert response.status_code == 200


# -- state -------------------------------------------------------------------------------


def test_state_update_replaces_the_state(api, make_instance):
    response = api.patch(url(make_instance(started=True), "state"),
                         {"state": {"email": "bo@example.org", "plan": None}}, format="json")

    assert response.status_code == 200
    assert response.json()["state"] == {"email": "bo@example.org", "plan": None}


def test_state_update_unblocks_a_blocked_instance(api, make_instance):
    response = api.patch(url(make_instance(blocked=True), "state"),
                         {"state": {"email": "bo@example.org", "plan": None}}, format="json")

    assert (response.json()["status"], response.json()["errors"]) == ("running", [])


def test_state_update_answers_the_new_revision_as_etag(api, make_instance):
    instance = make_instance(started=True)

    response = api.patch(url(instance, "state"), {"state": {"email": "x"}}, format="json")

    assert response["ETag"] == f'"{instance.revision + 1}"'


def test_state_update_of_a_cancelled_instance_is_refused(api, make_instance):
    instance = make_instance(started=True, commands=["cancel"])

    response = api.patch(url(instance, "state"), {"state": {"email": "x"}}, format="json")

    assert refusal(response) == "cancelled"


# -- each refusal code -------------------------------------------------------------------


def test_next_before_the_start_is_refused_not_running(api, make_instance):
    assert refusal(api.post(url(make_instance(), "next"))) == "not_running"


def test_a_command_after_a_cancel_is_refused_cancelled(api, make_instance):
    instance = make_instance(started=True, commands=["cancel"])

    assert refusal(api.post(url(instance, "next"))) == "cancelled"


def test_start_twice_is_refused_already_started(api, make_instance):
    assert refusal(api.post(url(make_instance(started=True), "start"))) == "already_started"


def test_next_without_the_required_input_is_refused_validation_failed(api, make_instance):
    assert refusal(api.post(url(make_instance(started=True), "next"))) == "validation_failed"


def test_validation_errors_stay_on_the_instance(api, make_instance):
    instance = make_instance(started=True)

    api.post(url(instance, "next"))

    body = api.get(url(instance)).json()
    assert (body["status"], body["errors"]) == ("blocked", ["Email is required"])


def test_validate_with_errors_is_refused_validation_failed(api, make_instance):
    assert refusal(api.post(url(make_instance(started=True), "validate"))) == "validation_failed"


def test_next_while_the_step_s_work_runs_is_refused_work_in_progress(api, make_instance):
    instance = make_instance(workflow="back-office", started=True)  # "charge" stays queued

    assert refusal(api.post(url(instance, "next"))) == "work_in_progress"


def test_rollback_while_a_cancelled_attempt_is_stopping_is_refused_still_stopping(
        api, make_instance):
    instance = make_instance(workflow="back-office", started=True)
    services.claim_attempt(instance.operations[0]["token"])  # a worker runs it ...
    services.cancel(instance)  # ... and is told to stop, but has not stopped yet

    assert refusal(api.post(url(instance, "rollback"))) == "still_stopping"


def test_cancel_that_the_exit_guard_refuses_is_refused_cancel_refused(api, make_instance):
    instance = make_instance(workflow="guarded-exit", started=True)

    assert refusal(api.post(url(instance, "cancel"))) == "cancel_refused"


def test_cancel_of_a_completed_instance_is_refused_completed(api, make_instance):
    instance = make_instance(workflow="guarded-exit", started=True, commands=["next"])

    assert refusal(api.post(url(instance, "cancel"))) == "completed"


def test_cancel_twice_is_refused_already_cancelled(api, make_instance):
    instance = make_instance(started=True, commands=["cancel"])

    assert refusal(api.post(url(instance, "cancel"))) == "already_cancelled"


def test_back_on_the_first_step_is_refused_no_previous_step(api, make_instance):
    assert refusal(api.post(url(make_instance(started=True), "back"))) == "no_previous_step"


def test_validate_before_the_start_is_refused_no_current_step(api, make_instance):
    assert refusal(api.post(url(make_instance(), "validate"))) == "no_current_step"


def test_retry_of_a_running_instance_is_refused_not_failed(api, make_instance):
    assert refusal(api.post(url(make_instance(started=True), "retry"))) == "not_failed"


def test_rollback_of_an_instance_that_never_started_is_refused_not_started(api, make_instance):
    assert refusal(api.post(url(make_instance(), "rollback"))) == "not_started"


def test_rollback_while_compensating_is_refused_rollback_in_progress(api, make_instance):
    instance = make_instance(workflow="compensated", started=True, commands=["next", "rollback"])

    assert refusal(api.post(url(instance, "rollback"))) == "rollback_in_progress"


def test_a_refused_command_changes_nothing(api, make_instance):
    instance = make_instance(started=True)
    before = WorkflowInstance.objects.get(pk=instance.pk)

    api.post(url(instance, "back"))

    after = WorkflowInstance.objects.get(pk=instance.pk)
    assert (after.revision, after.snapshot, after.status) == (
        before.revision, before.snapshot, before.status)


@pytest.fixture
def redefined():
    """``redefined(version)`` registers (again) the two-step workflow "api-versioned"."""
    registered: list[str] = []

    def redefine(version: int) -> Workflow:
        registry.unregister("api-versioned")
        definition = Workflow(id="api-versioned", version=version,
                              steps=[Step("a"), Step("b")], transitions=[Transition("a", "b")])
        registered.append(registry.register(definition).id)
        return definition

    yield redefine
    for workflow_id in registered:
        registry.unregister(workflow_id)


def test_a_command_on_an_instance_that_needs_a_migration_is_refused_migration_required(
        api, make_instance, redefined):
    redefined(1)
    instance = make_instance(workflow="api-versioned", started=True)
    redefined(2)

    assert refusal(api.post(url(instance, "next"))) == "migration_required"
    assert WorkflowInstance.objects.get(pk=instance.pk).revision == instance.revision


def test_a_command_on_an_instance_whose_workflow_is_gone_is_refused_unknown_workflow(
        api, make_instance, redefined):
    redefined(1)
    instance = make_instance(workflow="api-versioned", started=True)
    registry.unregister("api-versioned")

    assert refusal(api.post(url(instance, "next"))) == "unknown_workflow"
    assert api.get(url(instance)).status_code == 200
