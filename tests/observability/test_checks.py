"""METRICS and TRACING need their extras: the system checks say so at start-up."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from django.core import checks

from django_workflows.checks import check_observability


def problems(ids: set[str]) -> list[str]:
    return [message.id for message in check_observability() if message.id in ids]


def without(monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    """As on a site where ``packages`` are not installed."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None
                        if name.split(".")[0] in packages else find_spec(name, *args))


def test_metrics_on_without_prometheus_client_is_error_e060(settings: Any,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    without(monkeypatch, "prometheus_client")
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "METRICS": True}
    [error] = [m for m in check_observability() if m.id == "django_workflows.E060"]
    assert error.level == checks.ERROR
    assert "django-durable-workflows[metrics]" in error.hint


def test_tracing_on_without_opentelemetry_is_error_e061(settings: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    without(monkeypatch, "opentelemetry")
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TRACING": True}
    assert problems({"django_workflows.E061"}) == ["django_workflows.E061"]


def test_either_off_asks_for_nothing(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    without(monkeypatch, "prometheus_client", "opentelemetry")
    assert problems({"django_workflows.E060", "django_workflows.E061"}) == []


def test_a_switch_that_is_not_a_bool_is_error_e010(settings: Any) -> None:
    from django_workflows.checks import check_settings

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "METRICS": "yes",
                                 "METRICS_TOKEN": ""}
    messages = [m.msg for m in check_settings() if m.id == "django_workflows.E010"]
    assert any("'METRICS'" in msg for msg in messages)
    assert any("'METRICS_TOKEN'" in msg for msg in messages)
