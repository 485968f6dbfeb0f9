"""``GET /api/schedules/`` (DESIGN.md §8): the registered schedules, read-only, for signed-in
users."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_workflows import Schedule, services
from django_workflows.services.schedules import fire_due_schedules, sync_schedules
from tests.testapp.schedules import registered

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)
NIGHTLY = Schedule("nightly-report", workflow="scheduled-report", cron="0 3 * * *",
                   timezone="Europe/Berlin", overlap="skip", catch_up="latest")
PULSE = Schedule("pulse", workflow="scheduled-tick", every=30, start=False)


@pytest.fixture(autouse=True)
def schedules():
    with registered(NIGHTLY, PULSE):
        yield


def test_the_list_gives_each_registered_schedule_and_where_it_stands(api):
    sync_schedules(T0 - timedelta(seconds=1))
    fire_due_schedules(T0 + timedelta(seconds=0.5))
    run = services.create("scheduled-tick", reference="pulse-but-by-hand")  # not a run

    response = api.get("/api/schedules/")

    assert response.status_code == 200
    nightly, pulse = response.json()
    assert nightly == {
        "id": "nightly-report", "workflow": "scheduled-report", "cron": "0 3 * * *",
        "every": None, "timezone": "Europe/Berlin", "start": True, "overlap": "skip",
        "catch_up": "latest", "paused": False, "last_due_at": None,
        "next_due_at": "2030-01-02T02:00:00Z", "last_run": None, "skipped": 0, "runs": 0}
    assert pulse["every"] == 30 and pulse["cron"] is None and pulse["start"] is False
    assert pulse["last_due_at"] == "2030-01-01T10:00:00Z"
    assert pulse["next_due_at"] == "2030-01-01T10:00:30Z"
    assert pulse["runs"] == 1 and pulse["last_run"] != str(run.pk)


def test_a_paused_schedule_has_no_next_due_time(api):
    services.pause_schedule("pulse")

    pulse = api.get("/api/schedules/pulse/").json()

    assert pulse["paused"] is True and pulse["next_due_at"] is None


def test_one_schedule_and_an_unknown_one(api):
    assert api.get("/api/schedules/nightly-report/").json()["cron"] == "0 3 * * *"

    missing = api.get("/api/schedules/nope/")
    assert missing.status_code == 404
    assert missing.json()["detail"] == 'No schedule "nope" is registered.'


def test_schedules_are_read_only(api):
    assert api.post("/api/schedules/", {"id": "x"}, format="json").status_code == 405
    assert api.delete("/api/schedules/pulse/").status_code == 405


def test_schedules_need_a_signed_in_user(client_as):
    assert client_as(None).get("/api/schedules/").status_code in (401, 403)


def test_the_schema_documents_the_schedules(client_as, owner):
    schema = client_as(owner).get("/api/schema/", {"format": "json"}).json()

    assert set(schema["paths"]["/api/schedules/"]) == {"get"}
    assert set(schema["paths"]["/api/schedules/{id}/"]) - {"parameters"} == {"get"}
    fields = schema["components"]["schemas"]["Schedule"]["properties"]
    assert {"id", "workflow", "cron", "every", "timezone", "paused", "last_due_at",
            "next_due_at", "runs"} <= set(fields)
