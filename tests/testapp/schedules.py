"""Workflows that schedules start, and the schedules of the tests (tests/schedules).

The workflows are registered from ``workflows.py``. The schedules are not: a schedule
registered for the whole run would make instances in every test that sweeps. Each test
registers the ones it needs (``registered(...)``), and a qcluster started with
``DWF_TEST_SCHEDULES=1`` registers ``CLUSTER_SCHEDULES`` through ``SCHEDULES``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from django_workflows import Schedule, Step, Workflow, registry

# Waits on its one manual step: a run stays unfinished until it is cancelled.
report = Workflow(id="scheduled-report", title="A scheduled report",
                  initial={"period": None}, steps=[Step("review")])

# Its one step moves on by itself: a run finishes as soon as it starts.
tick = Workflow(id="scheduled-tick", title="A scheduled tick",
                steps=[Step("done", advance="auto")])

# Every two seconds, each due time run (a cluster's start-up may come late).
every_two_seconds = Schedule("tick-every-2s", workflow=tick, every=2, catch_up="all")
CLUSTER_SCHEDULES = [every_two_seconds]

SCHEDULES = CLUSTER_SCHEDULES if os.environ.get("DWF_TEST_SCHEDULES") == "1" else []


@contextmanager
def registered(*schedules: Schedule) -> Iterator[tuple[Schedule, ...]]:
    """The schedules registered for the block only."""
    for schedule in schedules:
        registry.register_schedule(schedule, origin="tests.testapp.schedules")
    try:
        yield schedules
    finally:
        for schedule in schedules:
            registry.unregister_schedule(schedule.id)
