"""The nightly stock report: a schedule (03:00 in Berlin) that makes one ``stock-report``
run a night, which writes the report and emails it.

The example's settings register the schedule (``SHOP_SCHEDULES``); the test suite's do
not, so each test here registers it for itself.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core import mail
from django.urls import reverse

from django_workflows import registry, services
from django_workflows.services.schedules import fire_due_schedules, runs_of, sync_schedules
from example_project.shop.models import StockReport
from example_project.shop.workflows import nightly_stock_report

from .factories import StockItemFactory

pytestmark = pytest.mark.django_db

SEEN = datetime(2030, 6, 10, 12, 0, tzinfo=UTC)  # the sweep first sees the schedule
NIGHT = datetime(2030, 6, 11, 1, 0, 1, tzinfo=UTC)  # 03:00:01 in Berlin (summer time)


@pytest.fixture
def schedule():
    nightly = nightly_stock_report()
    registry.register_schedule(nightly, origin="tests.example.test_stock_report")
    try:
        yield nightly
    finally:
        registry.unregister_schedule(nightly.id)


@pytest.fixture
def stock(db):
    return [StockItemFactory(sku="MUG", name="Mug", on_hand=40, reserved=35),
            StockItemFactory(sku="TEE", name="T-shirt", on_hand=20, reserved=0)]


def test_it_is_due_every_night_at_three_in_berlin(schedule):
    assert schedule.next_due(SEEN) == datetime(2030, 6, 11, 1, 0, tzinfo=UTC)
    winter = datetime(2030, 12, 10, 12, 0, tzinfo=UTC)
    assert schedule.next_due(winter) == datetime(2030, 12, 11, 2, 0, tzinfo=UTC)


def test_a_night_makes_one_run_that_writes_the_report_and_emails_it(
        schedule, stock, django_capture_on_commit_callbacks):
    sync_schedules(SEEN)

    with django_capture_on_commit_callbacks(execute=True):  # the run's work, at once
        fire_due_schedules(NIGHT)

    run = runs_of("nightly-stock-report").get()
    assert (run.workflow, run.reference, run.state) == (
        "stock-report", "nightly-stock-report@2030-06-11T01:00:00+00:00",
        {"date": "2030-06-11"})
    assert run.status == "completed"
    report = StockReport.objects.get(run=str(run.pk))
    assert [(line["sku"], line["available"]) for line in report.lines] == [("MUG", 5),
                                                                            ("TEE", 20)]
    [email] = mail.outbox
    assert (email.subject, email.to) == ("Stock report of 2030-06-11", ["stock@example.com"])
    assert "Running low: MUG." in email.body


def test_a_second_sweep_of_the_same_night_makes_no_second_run(
        schedule, stock, django_capture_on_commit_callbacks):
    sync_schedules(SEEN)
    with django_capture_on_commit_callbacks(execute=True):
        fire_due_schedules(NIGHT)
        fire_due_schedules(NIGHT)

    assert runs_of("nightly-stock-report").count() == 1
    assert StockReport.objects.count() == 1


def test_a_paused_schedule_makes_no_run_and_a_resumed_one_runs_the_next_night(
        schedule, stock, django_capture_on_commit_callbacks):
    sync_schedules(SEEN)
    services.pause_schedule("nightly-stock-report")
    fire_due_schedules(NIGHT)
    assert not runs_of("nightly-stock-report").exists()

    services.resume_schedule("nightly-stock-report")
    with django_capture_on_commit_callbacks(execute=True):
        fire_due_schedules(datetime(2030, 6, 12, 1, 0, 1, tzinfo=UTC))

    assert [run.state["date"] for run in runs_of("nightly-stock-report")] == ["2030-06-12"]


def test_a_report_is_run_by_hand_for_today(wf, stock, operator):
    run = wf.create("stock-report", start=True, user=operator)

    assert wf.reload(run).status == "completed"
    assert StockReport.objects.get(run=str(run.pk)).date.isoformat() == run.state["date"]


def test_the_admin_lists_the_schedule_with_its_cron_and_time_zone(schedule, admin_client):
    page = admin_client.get(reverse("admin:django_workflows_workflowschedule_changelist"))

    content = page.content.decode()
    assert "nightly-stock-report" in content
    assert "0 3 * * *" in content and "Europe/Berlin" in content
