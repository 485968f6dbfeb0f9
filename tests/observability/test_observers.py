"""Observers never change the work they observe (DESIGN.md §2: observers are isolated)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import pytest

from django_workflows import services
from django_workflows.observability import observers
from django_workflows.observability.observers import Observer

pytestmark = [pytest.mark.django_db(transaction=True)]


class Broken(Observer):
    def unit(self, unit: Any) -> Any:
        return self._breaking()

    @contextmanager
    def _breaking(self) -> Any:
        raise RuntimeError("broken on the way in")
        yield

    def unit_done(self, unit: Any) -> None:
        raise RuntimeError("broken on the way out")

    def handing_out(self, attempts: Any, deadlines: Any) -> None:
        raise RuntimeError("broken while handing out")

    def attempt_done(self, run: Any) -> None:
        raise RuntimeError("broken after an attempt")


def test_an_observer_that_raises_is_logged_and_the_work_goes_on(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(observers, "active", (Broken(),))
    order = services.create("obs-order", start=True)
    order = services.next(order.pk)

    assert order.status == "completed"
    assert "broken on the way out" in caplog.text
    assert "broken after an attempt" in caplog.text


def test_with_both_settings_off_no_observer_is_active(settings: Any) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "METRICS": False,
                                 "TRACING": False}
    assert observers.active == ()
