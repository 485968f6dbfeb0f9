"""A schedule paused and resumed from the admin, in a real browser (Chromium)."""

from __future__ import annotations

import pytest

from django_workflows import Schedule
from django_workflows.models import WorkflowSchedule
from tests.testapp.schedules import registered

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LIST = "/admin/django_workflows/workflowschedule/"
NIGHTLY = Schedule("nightly-report", workflow="scheduled-report", cron="0 3 * * *",
                   timezone="Europe/Berlin")
PULSE = Schedule("pulse", workflow="scheduled-tick", every=30)


@pytest.fixture(autouse=True)
def schedules():
    with registered(NIGHTLY, PULSE):
        yield


def state_of(page, schedule_id: str) -> str:
    return page.inner_text(f"#result_list tr:has(a:text-is('{schedule_id}')) .dwf-schedule-state")


def paused(schedule_id: str) -> bool:
    return WorkflowSchedule.objects.get(pk=schedule_id).paused


def test_a_schedule_is_paused_by_its_button_and_resumed_by_the_bulk_action(page):
    page.goto(LIST)
    assert state_of(page, "pulse") == "Active" and state_of(page, "nightly-report") == "Active"

    page.click("#result_list tr:has(a:text-is('pulse')) button.dwf-schedule-pause")
    page.wait_for_selector("ul.messagelist")

    assert 'Schedule "pulse" paused.' in page.inner_text("ul.messagelist")
    assert state_of(page, "pulse") == "Paused" and state_of(page, "nightly-report") == "Active"
    assert paused("pulse") and not paused("nightly-report")
    screenshot(page, "schedules-one-paused")

    page.check("#result_list tr:has(a:text-is('pulse')) input.action-select")
    page.select_option("select[name=action]", "resume_selected")
    page.click("button[name=index]")
    page.wait_for_selector("ul.messagelist li.success")

    assert "Resumed 1 schedule(s)" in page.inner_text("ul.messagelist")
    assert state_of(page, "pulse") == "Active"
    assert not paused("pulse")


def test_a_schedule_is_paused_and_resumed_from_its_own_page(page):
    page.goto(LIST)
    page.click("#result_list a:text-is('nightly-report')")
    page.wait_for_selector("#dwf-schedule-buttons")
    assert "0 3 * * *" in page.inner_text("#content-main")

    page.click("#dwf-schedule-buttons button.dwf-schedule-pause")
    page.wait_for_selector("ul.messagelist")
    assert paused("nightly-report")
    assert page.inner_text("#dwf-schedule-buttons button") == "Resume"

    page.click("#dwf-schedule-buttons button.dwf-schedule-resume")
    page.wait_for_selector("#dwf-schedule-buttons button.dwf-schedule-pause")
    assert not paused("nightly-report")
    screenshot(page, "schedule-page")
