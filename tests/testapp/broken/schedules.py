"""Schedules found by autodiscovery: one at module level, two in ``SCHEDULES``."""

from __future__ import annotations

from django_workflows import Schedule

nightly = Schedule("broken-nightly", workflow="scheduled-report", cron="0 3 * * *")
SCHEDULES = [nightly,
             Schedule("broken-hourly", workflow="scheduled-report", cron="@hourly"),
             Schedule("broken-pulse", workflow="scheduled-tick", every=30)]
