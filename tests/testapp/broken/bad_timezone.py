"""A schedule in a time zone that does not exist (E052)."""

from __future__ import annotations

from django_workflows import Schedule

nightly = Schedule("broken-zone", workflow="scheduled-report", cron="0 3 * * *",
                   timezone="Europe/Atlantis")
