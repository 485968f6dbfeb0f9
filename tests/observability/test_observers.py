"""Observers sit above the services (issue 37): the services hand out one typed report
after each unit of work commits, and observers (the settings' ``OBSERVERS``) subscribe to
it; they never change the work they observe (DESIGN.md §2: observers are isolated)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from django_workflows import services
from django_workflows.models import WorkflowInstance
from django_workflows.observability.observers import Observer
from django_workflows.services import reports

pytestmark = [pytest.mark.django_db(transaction=True)]

SERVICES = Path(__file__).resolve().parents[2] / "django_workflows" / "services"


class Broken(Observer):
    def unit_done(self, report: Any) -> None:
        raise RuntimeError("broken on the way out")

    def attempt(self, run: Any) -> Any:
        raise RuntimeError("broken on the way in")

    def attempt_done(self, run: Any) -> None:
        raise RuntimeError("broken after an attempt")


class Recording(Observer):
    """An observer a project names in OBSERVERS: what it was told, and what it saw then."""

    seen: list[tuple[reports.UnitReport, bool, int]] = []

    def unit_done(self, report: reports.UnitReport) -> None:
        committed = WorkflowInstance.objects.filter(pk=report.instance_id).values_list(
            "revision", flat=True).first() if report.instance_id else None
        Recording.seen.append((report, connection.in_atomic_block, committed or 0))


@pytest.fixture
def recording(settings: Any) -> Any:
    Recording.seen = []
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "OBSERVERS": [f"{__name__}.Recording"]}
    yield Recording
    settings.DJANGO_WORKFLOWS = {key: value for key, value in settings.DJANGO_WORKFLOWS.items()
                                 if key != "OBSERVERS"}


def test_an_observer_named_in_the_settings_gets_a_report_of_each_unit_after_commit(
        recording: Any) -> None:
    instance = services.create("wizard", start=True)
    recording.seen.clear()
    revision = WorkflowInstance.objects.get(pk=instance.pk).revision

    services.update_state(instance, {"email": "a@example.com", "plan": None})

    [(report, in_transaction, revision_seen)] = recording.seen
    assert (report.kind, report.command, report.instance_id) == (
        "command", "update_state", str(instance.pk))
    assert report.path in ("locked", "at_once") and report.lock_held is not None
    assert (report.revision_before, report.revision_after) == (revision, revision + 1)
    assert report.outcome == "moved" and report.applied is not None
    assert not in_transaction and revision_seen == revision + 1  # told once it committed


def test_a_refused_command_is_reported_with_its_code(recording: Any) -> None:
    instance = services.create("wizard")
    with pytest.raises(Exception):  # noqa: B017 - the refusal's own type is not the point
        services.next(instance)

    [(report, _, _)] = recording.seen[1:]
    assert (report.command, report.outcome, report.code) == ("next", "refused", "not_running")


def test_an_observer_that_raises_is_logged_and_the_work_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    reports.use([Broken()])
    try:
        order = services.create("obs-order", start=True)
        order = services.next(order.pk)
    finally:
        reports.configure()

    assert order.status == "completed"
    assert "broken on the way out" in caplog.text
    assert "broken after an attempt" in caplog.text


def test_with_no_observer_set_nobody_is_told(settings: Any) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "METRICS": False,
                                 "TRACING": False, "OBSERVERS": []}
    assert reports.subscribers() == () and not reports.watched()


def test_the_services_import_nothing_of_the_observers() -> None:
    """The one arrow that ran up: observability is above the services, never below."""
    found = []
    for path in SERVICES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.name}: {name}" for name in names if "observability" in name]
    assert found == []


def test_an_observer_path_that_does_not_import_is_a_startup_error(settings: Any) -> None:
    from django.core.checks import run_checks

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "OBSERVERS": ["myproject.nowhere.Observer"]}
    errors = [error.msg for error in run_checks() if error.id == "django_workflows.E010"]

    assert len(errors) == 1 and "'myproject.nowhere.Observer', which cannot be imported" \
        in errors[0]
