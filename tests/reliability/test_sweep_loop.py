"""``workflows_sweep --loop`` outlives a database or broker that goes away for a while."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import OperationalError

from django_workflows.management.commands import workflows_sweep
from django_workflows.services import SweepReport


def test_the_loop_goes_on_after_a_failed_sweep(monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> SweepReport:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return SweepReport(fired=1)

    monkeypatch.setattr(workflows_sweep, "sweep", flaky)
    out = StringIO()
    call_command("workflows_sweep", "--loop", "--interval", "0.05", "--for", "0.5", stdout=out)
    assert len(calls) > 2  # it went on sweeping
    assert "The sweep failed" in caplog.text
    assert "1 deadlines fired" in out.getvalue()


def test_a_single_sweep_still_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> SweepReport:
        raise OperationalError("the database is down")

    monkeypatch.setattr(workflows_sweep, "sweep", broken)
    with pytest.raises(OperationalError):
        call_command("workflows_sweep", stdout=StringIO())
