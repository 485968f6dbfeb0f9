"""Schedules in the admin: every registered one listed with its times and its runs, pause
and resume as buttons and bulk actions through the service, nothing else editable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from django_workflows import Schedule, services
from django_workflows.models import WorkflowSchedule
from django_workflows.services.schedules import fire_due_schedules, sync_schedules
from tests.testapp.schedules import registered

from .conftest import logged_in, shown_messages, with_permissions

pytestmark = pytest.mark.django_db

LIST = reverse("admin:django_workflows_workflowschedule_changelist")
T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)

NIGHTLY = Schedule("nightly-report", workflow="scheduled-report", cron="0 3 * * *",
                   timezone="Europe/Berlin", overlap="skip")
PULSE = Schedule("pulse", workflow="scheduled-tick", every=30)


@pytest.fixture(autouse=True)
def schedules():
    with registered(NIGHTLY, PULSE):
        yield


def page_url(schedule_id: str) -> str:
    return reverse("admin:django_workflows_workflowschedule_change", args=[schedule_id])


def action_url(verb: str, schedule_id: str) -> str:
    return reverse(f"admin:django_workflows_workflowschedule_{verb}", args=[schedule_id])


def paused(schedule: Schedule) -> bool:
    return WorkflowSchedule.objects.get(pk=schedule.id).paused


@pytest.fixture
def scheduler(db):
    """Staff who may see schedules and pause them."""
    return with_permissions("scheduler", "view_workflowschedule", "change_workflowschedule",
                            "view_workflowinstance")


@pytest.fixture
def watcher(db):
    """Staff who may only look at schedules."""
    return with_permissions("watcher", "view_workflowschedule")


def test_the_list_shows_every_registered_schedule_even_before_the_sweep_saw_it(root_client):
    page = root_client.get(LIST).content.decode()

    assert "nightly-report" in page and "pulse" in page
    assert "0 3 * * *</code>" in page and "Europe/Berlin" in page
    assert "every 30 s" in page and "A scheduled report" in page
    assert WorkflowSchedule.objects.count() == 2


def test_the_list_links_each_schedule_to_the_instances_it_made(root_client):
    sync_schedules(T0)
    fire_due_schedules(T0 + timedelta(seconds=30.5))
    fire_due_schedules(T0 + timedelta(seconds=60.5))
    services.create("scheduled-tick", reference="pulse-but-by-hand")

    page = root_client.get(LIST).content.decode()
    assert "2 runs" in page and "0 runs" in page

    runs = root_client.get(reverse("admin:django_workflows_workflowinstance_changelist"),
                           {"reference__startswith": "pulse@"}).content.decode()
    assert "pulse@2030-01-01T10:00:30+00:00" in runs and "pulse@2030-01-01T10:01:00+00:00" in runs
    assert "pulse-but-by-hand" not in runs


def test_the_pause_button_of_a_row_pauses_it_through_the_service(scheduler):
    client = logged_in(scheduler)

    response = client.post(action_url("pause", "pulse"), {"_back": "list"}, follow=True)

    assert paused(PULSE) and not paused(NIGHTLY)
    assert response.redirect_chain[-1][0] == LIST
    assert ("success", 'Schedule "pulse" paused.') in shown_messages(response)
    assert "dwf-schedule-resume" in response.content.decode()  # its button now resumes


def test_bulk_actions_pause_and_resume_the_selected_schedules(scheduler):
    client = logged_in(scheduler)

    response = client.post(LIST, {"action": "pause_selected", "index": "0",
                                  "_selected_action": ["pulse", "nightly-report"]}, follow=True)
    assert paused(PULSE) and paused(NIGHTLY)
    assert ("success", "Paused 2 schedule(s).") in shown_messages(response)

    client.post(LIST, {"action": "resume_selected", "index": "0",
                       "_selected_action": ["pulse"]})
    assert not paused(PULSE) and paused(NIGHTLY)


def test_the_schedules_page_is_read_only_with_its_pause_button(scheduler):
    client = logged_in(scheduler)

    page = client.get(page_url("nightly-report")).content.decode()

    assert 'name="_save"' not in page and "Delete" not in page
    assert "dwf-schedule-pause" in page and "catch_up=none" in page and "overlap=skip" in page
    response = client.post(action_url("pause", "nightly-report"), {"_back": "page"})
    assert response.url == page_url("nightly-report") and paused(NIGHTLY)
    client.post(page_url("nightly-report"), {"paused": ""})  # no form saves anything
    assert paused(NIGHTLY)


def test_no_schedule_is_added_or_deleted_in_the_admin(root_client):
    sync_schedules()
    assert root_client.get(reverse("admin:django_workflows_workflowschedule_add")
                           ).status_code == 403
    assert root_client.get(reverse("admin:django_workflows_workflowschedule_delete",
                                   args=["pulse"])).status_code in (302, 403)
    assert WorkflowSchedule.objects.filter(pk="pulse").exists()


def test_a_user_who_may_only_look_gets_no_buttons_and_cannot_pause(watcher):
    client = logged_in(watcher)

    page = client.get(LIST).content.decode()
    assert "pulse" in page
    assert "dwf-schedule-pause" not in page and "pause_selected" not in page
    assert client.post(action_url("pause", "pulse"), {"_back": "list"}).status_code == 403
    assert "dwf-schedule-pause" not in client.get(page_url("pulse")).content.decode()
    assert not paused(PULSE)


def test_a_row_of_a_schedule_no_longer_declared_is_not_listed(root_client):
    WorkflowSchedule.objects.create(id="gone", next_due_at=T0)

    assert "gone" not in root_client.get(LIST).content.decode()
    response = root_client.post(action_url("pause", "gone"), {"_back": "list"}, follow=True)
    assert ("error", 'Pause "gone" not done: No schedule "gone" is registered') in \
        shown_messages(response)
