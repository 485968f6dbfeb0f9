"""A schedule whose cron has four fields (E051)."""

from __future__ import annotations

from django_workflows import Schedule

nightly = Schedule("broken-cron", workflow="scheduled-report", cron="0 3 * *")
