"""The instance page: summary, diagram, work, nesting, state and the event timeline."""

from __future__ import annotations

import html
import json
import re
import uuid

import pytest

from django_workflows import clock, services
from django_workflows.admin.pages import events_page
from django_workflows.engine import Progress
from django_workflows.models import Attempt, WorkflowInstance
from django_workflows.runners.worker import DatabaseSink, run_attempt
from tests.factories import UserFactory, WorkflowInstanceFactory

from .conftest import instance_url, logged_in

pytestmark = pytest.mark.django_db


def page(client, instance) -> str:
    response = client.get(instance_url(instance))
    assert response.status_code == 200
    return response.content.decode()


def section(content: str, element_id: str) -> str:
    found = re.search(rf'<section class="[^"]*" id="{element_id}">(.*?)</section>', content, re.S)
    assert found, f"no section #{element_id}"
    return found.group(1)


def marks(content: str) -> dict[str, str]:
    return dict(re.findall(r'data-step="([^"]+)" data-mark="([^"]*)"', content))


def failed_import(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return services.create("admin-fragile", start=True)


def test_page_summarises_the_instance(root_client):
    owner = UserFactory(username="ann")
    instance = WorkflowInstanceFactory(workflow="admin-undo", started=True, owner=owner)

    summary = section(page(root_client, instance), "dwf-summary")

    assert "Undone by compensations" in summary and "admin-undo" in summary
    assert '<span id="dwf-status" class="dwf-badge dwf-status-running"' in summary
    assert "<code>draft</code>" in summary
    assert "ann" in summary
    assert '<td id="dwf-revision">2</td>' in summary


def test_page_shows_the_state_as_formatted_json(root_client):
    instance = WorkflowInstanceFactory(state={"email": "ann@example.com", "plan": "pro"})

    state = section(page(root_client, instance), "dwf-state")

    shown = re.search(r'<pre class="dwf-json" id="dwf-state-json">(.*?)</pre>', state, re.S)
    text = html.unescape(shown.group(1))
    assert json.loads(text) == {"email": "ann@example.com", "plan": "pro"}
    assert '\n  "email": "ann@example.com"' in text  # indented, one key a line


def test_page_draws_the_diagram_inline_with_completed_skipped_and_current_steps(root_client):
    instance = WorkflowInstanceFactory(state={"email": "ann@example.org", "plan": None},
                                       started=True, commands=["next"])

    diagram = section(page(root_client, instance), "dwf-diagram")

    assert "<svg " in diagram and "<script" not in diagram
    assert marks(diagram) == {"account": "completed", "plan": "skipped", "confirm": "current"}


def test_page_marks_the_step_of_a_failed_instance_failed(root_client,
                                                         django_capture_on_commit_callbacks):
    instance = failed_import(django_capture_on_commit_callbacks)

    content = page(root_client, instance)

    assert marks(section(content, "dwf-diagram"))["fetch"] == "failed"
    assert "feed unavailable (503)" in section(content, "dwf-summary")


def test_page_loads_no_script_or_style_from_another_site(root_client):
    content = page(root_client, WorkflowInstanceFactory(started=True))

    sources = re.findall(r'(?:src|href)="(https?:)?//', content)
    assert sources == []


def test_page_lists_operations_with_status_attempt_progress_logs_and_error(
        root_client, django_capture_on_commit_callbacks):
    instance = failed_import(django_capture_on_commit_callbacks)

    operations = section(page(root_client, instance), "dwf-operations")

    row = re.search(r'<tr class="dwf-operation" data-operation="download" '
                    r'data-phase="none" data-outcome="failed">(.*?)</tr>', operations,
                    re.S).group(1)
    assert "Download" in row
    assert "dwf-status-failed" in row
    assert '<td class="dwf-op-attempt">1 of 1</td>' in row
    # Finished: no bar but its outcome, and the last progress in words.
    assert '<progress class="dwf-progress" max="100" hidden>' in row
    assert '<span class="dwf-outcome dwf-outcome-failed">failed</span>' in row
    assert "1 / 4 · connecting" in row
    assert "connecting to the feed\nthe feed answered 503" in row
    assert "RuntimeError: feed unavailable (503)" in row


def test_page_shows_the_live_progress_and_logs_of_a_running_attempt(root_client):
    now = clock.now()
    clock.use(lambda: now)
    try:
        instance = services.create("admin-slow", start=True)  # queued: no worker runs it here
        token = WorkflowInstance.objects.get(pk=instance.pk).operations[0]["token"]
        services.claim_attempt(token, worker="test")
        sink = DatabaseSink(token, threaded=False)
        sink.report(status=None, progress=Progress(6, 20, "tick 6"), logs=["tick 5", "tick 6"])
        sink.close()
        clock.use(lambda: now + 2)  # two seconds into the attempt: past "activity"

        row = section(page(root_client, instance), "dwf-operations")
    finally:
        clock.use(None)

    assert "dwf-status-running" in row
    assert 'data-phase="determinate"' in row
    assert '<progress class="dwf-progress" max="100" value="30">' in row
    assert "6 / 20 · tick 6" in row
    assert "tick 5\ntick 6" in row
    assert Attempt.objects.get(token=token).status == "running"


def test_page_lists_parallel_branches(root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("back-office", start=True)

    branches = section(page(root_client, instance), "dwf-branches")

    assert re.findall(r'data-branch="([^"]+)"', branches) == ["ship:stock", "ship:courier"]
    assert branches.count("dwf-status-succeeded") == 2


def test_page_of_a_parent_links_to_its_nested_child(root_client):
    parent = WorkflowInstanceFactory(workflow="parent", started=True, commands=["next"])
    child = WorkflowInstance.objects.get(parent=parent)

    content = page(root_client, parent)

    assert f'<a id="dwf-nested-link" href="{instance_url(child)}">' in content
    assert instance_url(child) in section(content, "dwf-children")


def test_page_of_a_nested_child_links_back_to_its_parent(root_client):
    parent = WorkflowInstanceFactory(workflow="parent", started=True, commands=["next"])
    child = WorkflowInstance.objects.get(parent=parent)

    content = page(root_client, child)

    assert f'<a id="dwf-parent-link" href="{instance_url(parent)}">' in content
    assert "(step <code>check</code>)" in content


def test_page_shows_the_rollback_plan_of_a_rollback_in_progress(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
    services.rollback(instance)  # its compensations wait for a worker

    plan = section(page(root_client, instance), "dwf-rollback")

    rows = re.findall(r"<tr><td>(\d+)</td><td>(\w+)</td><td><code>([\w/]+)</code></td>"
                      r'<td><span class="dwf-badge dwf-status-(\w+)"', plan)
    assert rows == [("1", "step", "draft", "running")]  # only completed steps are undone


def test_event_timeline_shows_the_newest_events_first(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])

    events = section(page(root_client, instance), "dwf-events")

    types = re.findall(r'<tr class="dwf-event dwf-event-([\w-]+)">', events)
    assert types == ["step-enter", "step-leave", "validate", "step-enter", "start"]


def test_event_timeline_is_paginated(root_client):
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True,
                                       commands=["next"] * 12)

    first = section(page(root_client, instance), "dwf-events")
    second = section(root_client.get(instance_url(instance), {"events_page": 2})
                     .content.decode(), "dwf-events")

    numbers = [int(n) for n in re.findall(r'<tr class="dwf-event[^"]*"><td>(\d+)</td>', first)]
    assert numbers == list(range(instance.last_event, instance.last_event - 25, -1))
    assert "page 1 of 2" in first and "older &rsaquo;" in first
    later = [int(n) for n in re.findall(r'<tr class="dwf-event[^"]*"><td>(\d+)</td>', second)]
    assert later == list(range(instance.last_event - 25, 0, -1))


def test_event_timeline_counts_and_lists_the_events_of_the_row_it_read(rf, superuser):
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True)
    read = WorkflowInstance.objects.get(pk=instance.pk)
    services.next(instance)  # committed after the page read the row, before its events
    request = rf.get("/")
    request.user = superuser

    events = events_page(request, read)

    assert events.paginator.count == read.last_event == len(events.object_list)
    assert [e.sequence for e in events.object_list] == list(range(read.last_event, 0, -1))


def test_event_times_show_seconds(root_client):
    events = section(page(root_client, WorkflowInstanceFactory(started=True)), "dwf-events")

    times = re.findall(r'<td class="dwf-event-time"><time datetime="[^"]+">([^<]+)</time>', events)
    assert times and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", t) for t in times)


def test_page_of_a_completed_instance_marks_no_step_current(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-undo", started=True,
                                       commands=["next", "next", "next"])
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "completed"

    content = page(root_client, instance)

    assert marks(content) == {"draft": "completed", "send": "completed", "sent": "completed"}
    assert "Last step" in section(content, "dwf-summary")


def test_page_shows_a_finished_operations_outcome_not_a_bar(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("admin-slow", state={"ticks": 1, "tick": 0}, start=True)

    row = section(page(root_client, instance), "dwf-operations")

    assert 'data-outcome="succeeded"' in row
    assert '<progress class="dwf-progress" max="100" hidden>' in row
    assert '<span class="dwf-outcome dwf-outcome-succeeded">succeeded</span>' in row


def test_page_shows_an_operation_a_rollback_undid_as_rolled_back(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("back-office", start=True)
    with django_capture_on_commit_callbacks(execute=False):  # one undo at a time
        services.rollback(instance)
    [item, *_] = WorkflowInstance.objects.get(pk=instance.pk).snap.rollback.items
    assert (item.kind, item.target) == ("operation", "charge")
    assert 'data-outcome="rolling back"' in section(page(root_client, instance),
                                                    "dwf-operations")
    with django_capture_on_commit_callbacks(execute=False):
        run_attempt(item.token, heartbeat_thread=False)

    row = section(page(root_client, instance), "dwf-operations")

    assert WorkflowInstance.objects.get(pk=instance.pk).status == "rolling-back"
    assert '<span class="dwf-outcome dwf-outcome-rolled-back">rolled back</span>' in row


def test_event_timeline_names_the_actor(operator):
    instance = WorkflowInstanceFactory(started=True, user=operator)

    events = section(page(logged_in(operator), instance), "dwf-events")

    assert "<td>operator</td>" in events


def test_page_of_an_unknown_instance_redirects_with_a_message(root_client):
    response = root_client.get(instance_url(type("Missing", (), {"pk": uuid.uuid4()})),
                               follow=True)

    assert response.status_code == 200
    assert "doesn\u2019t exist" in response.content.decode()


def test_page_with_a_malformed_id_redirects_not_a_500(root_client):
    response = root_client.get("/admin/django_workflows/workflowinstance/not-a-uuid/change/")

    assert response.status_code == 302


def buttons_of(content: str) -> list[str]:
    return re.findall(r'name="_command" value="(\w+)"', content)


def why_not(content: str) -> dict[str, str]:
    """The commands that do not apply, with the reason the page gives for each."""
    return {name: html.unescape(re.sub(r"<[^>]+>", "", reason)).strip() for name, reason in
            re.findall(r'<li data-command="(\w+)">(.*?)</li>', content, re.S)}


def test_page_offers_the_commands_that_apply_to_an_idle_instance(operator):
    content = page(logged_in(operator), WorkflowInstanceFactory())

    assert buttons_of(content) == ["start", "cancel"]
    assert set(why_not(content)) == {"next", "back", "rewind", "skip", "validate", "retry",
                                     "pause", "resume", "rollback"}
    assert why_not(content)["retry"] == 'Retry: Workflow "wizard" is not failed or blocked ' \
                                        '(status "idle")'


def test_page_offers_the_commands_that_apply_to_a_running_instance(operator):
    content = page(logged_in(operator), WorkflowInstanceFactory(
        workflow="long-manual", started=True, commands=["next"]))

    assert buttons_of(content) == ["next", "back", "rewind", "skip", "validate", "pause",
                                   "cancel", "rollback"]
    assert set(why_not(content)) == {"start", "retry", "resume"}


def test_page_asks_before_cancel_and_rollback(operator):
    content = page(logged_in(operator), WorkflowInstanceFactory(
        workflow="long-manual", started=True, commands=["next"]))

    assert re.findall(r'value="(\w+)" class="[^"]*" title="[^"]*" data-confirm=', content) == [
        "cancel", "rollback"]


def test_page_shows_no_commands_and_no_state_form_to_a_viewer(viewer):
    content = page(logged_in(viewer), WorkflowInstanceFactory(started=True))

    assert 'name="_command"' not in content
    assert 'id="dwf-state-form"' not in content
    assert "dwf-view-only" in content


def test_page_offers_nothing_the_definitions_rule_refuses_and_says_why(clerk):
    content = page(logged_in(clerk), WorkflowInstanceFactory(workflow="admin-guarded"))

    assert buttons_of(content) == []
    reasons = why_not(content)
    assert list(reasons) == ["start", "next", "back", "rewind", "skip", "validate", "retry",
                             "pause", "resume", "cancel", "rollback"]
    assert 'does not allow you to next this instance' in reasons["next"]
    assert 'id="dwf-state-form"' not in content


def test_page_is_forbidden_to_staff_without_permissions(outsider):
    response = logged_in(outsider).get(instance_url(WorkflowInstanceFactory()))

    assert response.status_code == 403


def test_page_has_no_form_over_the_engines_fields(root_client):
    content = page(root_client, WorkflowInstanceFactory(started=True))

    for field in ("status", "current_step", "snapshot", "version", "workflow", "owner"):
        assert f'name="{field}"' not in content
