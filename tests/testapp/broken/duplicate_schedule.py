"""A second schedule with the id "broken-nightly", which ``broken/schedules.py`` declares
(E002)."""

from __future__ import annotations

from django_workflows import Schedule

nightly = Schedule("broken-nightly", workflow="scheduled-tick", every=60)
