"""The JSON the instance page polls while work runs."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from django_workflows import services
from django_workflows.engine import Progress
from django_workflows.models import WorkflowInstance
from django_workflows.runners.worker import DatabaseSink
from tests.factories import WorkflowInstanceFactory

from .conftest import logged_in

pytestmark = pytest.mark.django_db


def live_url(instance_id) -> str:
    return reverse("admin:django_workflows_workflowinstance_live", args=[instance_id])


def running_count() -> WorkflowInstance:
    """An ``admin-slow`` instance whose operation a worker claimed and reported 6 of 20."""
    instance = services.create("admin-slow", start=True)
    token = WorkflowInstance.objects.get(pk=instance.pk).operations[0]["token"]
    services.claim_attempt(token, worker="test")
    sink = DatabaseSink(token, threaded=False)
    sink.report(status=None, progress=Progress(6, 20, "tick 6"), logs=["tick 6"])
    sink.close()
    return WorkflowInstance.objects.get(pk=instance.pk)


def test_live_view_gives_status_revision_and_the_operations_progress(root_client):
    instance = running_count()

    data = root_client.get(live_url(instance.pk)).json()

    assert (data["status"], data["status_label"], data["revision"], data["finished"]) == (
        "running", "Running", instance.revision, False)
    [operation] = data["operations"]
    assert operation["id"] == "count" and operation["status"] == "running"
    assert operation["progress"] == {"current": 6, "total": 20, "message": "tick 6"}
    assert (operation["percent"], operation["logs"], operation["attempt"]) == (30.0, ["tick 6"], 1)


def test_live_view_follows_the_progress_a_worker_writes(root_client):
    instance = running_count()
    token = instance.operations[0]["token"]
    sink = DatabaseSink(token, threaded=False)
    sink.report(status=None, progress=Progress(15, 20, "tick 15"), logs=[])
    sink.close()

    assert root_client.get(live_url(instance.pk)).json()["operations"][0]["percent"] == 75.0


def test_live_view_lists_parallel_branches(root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("back-office", start=True)

    data = root_client.get(live_url(instance.pk)).json()

    assert [(b["step"], b["id"], b["status"]) for b in data["parallel"]] == [
        ("ship", "stock", "succeeded"), ("ship", "courier", "succeeded")]


def test_live_view_is_open_to_viewers(viewer):
    instance = WorkflowInstanceFactory()

    assert logged_in(viewer).get(live_url(instance.pk)).status_code == 200


def test_live_view_is_forbidden_to_staff_without_permissions(outsider):
    response = logged_in(outsider).get(live_url(WorkflowInstanceFactory().pk))

    assert response.status_code == 403
    assert response.json() == {"detail": "You may not view workflow instances."}


def test_live_view_of_an_unknown_instance_is_404(root_client):
    assert root_client.get(live_url(uuid.uuid4())).status_code == 404


def test_live_view_sends_anonymous_users_to_the_login_page(client):
    response = client.get(live_url(uuid.uuid4()))

    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_live_view_at_the_pages_revision_sends_no_parts(root_client):
    instance = running_count()

    data = root_client.get(live_url(instance.pk), {"revision": instance.revision}).json()

    assert "parts" not in data


def test_live_view_at_the_pages_revision_while_work_runs_sends_the_timeline_up_to_now(
        root_client):
    instance = running_count()

    data = root_client.get(live_url(instance.pk), {"revision": instance.revision}).json()

    assert 'data-lane="operation:count"' in data["timeline"]
    assert "so far)" in data["timeline"]  # the running attempt's bar ends now


def test_live_view_of_an_instance_with_nothing_running_sends_no_timeline(root_client):
    instance = services.create("wizard", start=True)

    data = root_client.get(live_url(instance.pk), {"revision": instance.revision}).json()

    assert "timeline" not in data and "parts" not in data


def test_live_view_behind_the_pages_revision_sends_every_part_drawn_anew(root_client):
    instance = running_count()

    data = root_client.get(live_url(instance.pk), {"revision": instance.revision - 1}).json()

    assert list(data["parts"]) == ["commands", "summary", "diagram", "timeline", "tasks", "work",
                                   "state", "events"]
    assert 'id="dwf-status" class="dwf-badge dwf-status-running"' in data["parts"]["summary"]
    assert 'data-operation="count"' in data["parts"]["work"]
    assert 'name="csrfmiddlewaretoken"' in data["parts"]["commands"]  # its forms still post


def test_live_parts_of_a_finished_payment_are_all_current(root_client,
                                                           django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("admin-payment", state={"ticks": 1, "tick": 0}, start=True)
    instance.refresh_from_db()
    assert instance.status == "completed"

    parts = root_client.get(live_url(instance.pk), {"revision": 1}).json()["parts"]

    assert "dwf-status-completed" in parts["summary"]
    assert "Last step" in parts["summary"] and "Send the receipt <code>receipt</code>" in parts[
        "summary"]
    assert re.search(r'id="dwf-finished"><time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d<',
                     parts["summary"])
    assert dict(re.findall(r'data-step="(\w+)" data-mark="(\w*)"', parts["diagram"])) == {
        "charge": "completed", "receipt": "completed"}
    assert 'data-outcome="succeeded"' in parts["work"]
    assert 'value="cancel"' not in parts["commands"]
    assert f'<span id="dwf-events-count">{instance.last_event}</span>' in parts["events"]
    assert 'data-lane="operation:pay"' in parts["timeline"]


def test_live_view_of_a_viewer_draws_no_commands(viewer):
    instance = WorkflowInstanceFactory(started=True)

    parts = logged_in(viewer).get(live_url(instance.pk), {"revision": 0}).json()["parts"]

    assert 'name="_command"' not in parts["commands"] and "dwf-view-only" in parts["commands"]
