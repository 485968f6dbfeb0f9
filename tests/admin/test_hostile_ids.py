"""What a hostile user sends the admin's pages (issue 36): an id or a filter value with a
NUL character, which PostgreSQL's text refuses. Each page answers with a message, never a
500; who may not see such objects at all is refused before the id is read.

SQLite stores NUL characters: there the pages answered before the fix without an error,
but not as they do now (a filter "worked", an id was looked up).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from django_workflows import Schedule
from django_workflows.models import WorkflowSchedule
from django_workflows.services.schedules import sync_schedules
from tests.factories import WorkflowInstanceFactory
from tests.testapp.schedules import registered

from .conftest import logged_in, messages_of

pytestmark = pytest.mark.django_db

SCHEDULES = "admin:django_workflows_workflowschedule"
INBOX = reverse("admin:django_workflows_workflowtask_changelist")
NIGHTLY = Schedule("nightly-report", workflow="scheduled-report", cron="0 3 * * *")


@pytest.fixture(autouse=True)
def nightly():
    with registered(NIGHTLY):
        sync_schedules()
        yield


def schedule_url(view: str, schedule_id: str) -> str:
    return reverse(f"{SCHEDULES}_{view}", args=[schedule_id])


@pytest.mark.parametrize("view", ["change", "history", "delete"])
def test_a_schedule_id_with_a_nul_is_refused_to_staff_without_permissions_before_it_is_read(
        outsider, view):
    response = logged_in(outsider).get(schedule_url(view, "nightly-report\x00"))

    assert response.status_code == 403


@pytest.mark.parametrize("view", ["change", "history"])
def test_a_schedule_id_with_a_nul_names_no_schedule(root_client, view):
    response = root_client.get(schedule_url(view, "\x00"))

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:index")
    assert messages_of(response) == [
        "schedule with ID \u201c\x00\u201d doesn\u2019t exist. Perhaps it was deleted?"]


def test_deleting_a_schedule_with_a_nul_in_its_id_is_refused_as_deleting_any_is(root_client):
    response = root_client.get(schedule_url("delete", "\x00"))

    assert response.status_code == 403


def test_a_schedule_filter_with_a_nul_is_refused_as_a_bad_lookup(root_client):
    response = root_client.get(reverse(f"{SCHEDULES}_changelist"), {"id": "\x00"})

    assert response.status_code == 302
    assert "e=1" in response["Location"]
    assert messages_of(response) == [
        "The filter id cannot hold NUL characters; the list is shown unfiltered."]


def test_pausing_a_selection_of_only_a_nul_pauses_nothing_and_says_so(root_client):
    response = root_client.post(reverse(f"{SCHEDULES}_changelist"), {
        "action": "pause_selected", "index": "0", "_selected_action": ["\x00"]})

    assert response.status_code == 302
    assert messages_of(response) == ["Items must be selected in order to perform actions on "
                                     "them. No items have been changed."]
    assert not WorkflowSchedule.objects.get(pk="nightly-report").paused


def test_pausing_a_selection_with_a_nul_pauses_the_schedules_it_names(root_client):
    response = root_client.post(reverse(f"{SCHEDULES}_changelist"), {
        "action": "pause_selected", "index": "0",
        "_selected_action": ["\x00", "nightly-report"]})

    assert response.status_code == 302
    assert messages_of(response) == ["Paused 1 schedule(s)."]
    assert WorkflowSchedule.objects.get(pk="nightly-report").paused


@pytest.mark.parametrize("name", ["status__exact", "title", "step", "workflow"])
def test_a_task_inbox_filter_with_a_nul_is_refused_as_a_bad_lookup(outsider, name):
    WorkflowInstanceFactory(workflow="admin-undated", start=True)

    response = logged_in(outsider).get(INBOX, {name: "\x00"})

    assert response.status_code == 302
    assert "e=1" in response["Location"]
    assert messages_of(response) == [
        f"The filter {name} cannot hold NUL characters; the list is shown unfiltered."]



@pytest.mark.parametrize("name", ["completed_by_id", "claimed_by__id__exact"])
def test_a_task_inbox_filter_by_a_number_no_column_holds_is_refused_as_a_bad_lookup(
        root_client, name):
    WorkflowInstanceFactory(workflow="admin-undated", start=True)

    response = root_client.get(INBOX, {name: "9" * 40})  # SQLite: an OverflowError

    assert response.status_code == 302
    assert "e=1" in response["Location"]
    assert messages_of(response) == [f"The filter {name} names no row: no number that large "
                                     "is stored; the list is shown unfiltered."]
