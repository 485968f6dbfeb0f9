"""A schedule with two real qclusters on one database: each due time makes exactly one
instance, on time, and the one cluster left after the other stops goes on without a gap.

The clusters register ``tick-every-2s`` (``tests/testapp/schedules.py``: every two
seconds, ``catch_up="all"``) through ``DWF_TEST_SCHEDULES=1``; this process does not. Their
workers' sweeper threads are all that makes the instances.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from datetime import timedelta
from itertools import pairwise

import pytest

from django_workflows.engine.schedules import due_of
from django_workflows.models import SweepLease, WorkflowInstance, WorkflowSchedule
from django_workflows.services.sweep import LEASE
from tests.qcluster import background, wait_for
from tests.testapp.schedules import every_two_seconds

pytestmark = [pytest.mark.real_locks, pytest.mark.needs_q2, pytest.mark.slow,
              pytest.mark.django_db(transaction=True)]

EVERY = timedelta(seconds=every_two_seconds.every_seconds or 0)
LATE = timedelta(seconds=2)  # the aim: a due time's instance within 2 s


def runs() -> list[tuple]:
    """(due time, created at, reference) of every run so far, oldest first."""
    found = WorkflowInstance.objects.filter(
        reference__startswith=f"{every_two_seconds.id}@").values_list("reference", "created_at")
    return sorted((due_of(reference), created, reference) for reference, created in found)


def at_least(count: int):
    return lambda: (found := runs()) and len(found) >= count and found


def assert_one_per_due_time_without_a_gap(found: list[tuple]) -> None:
    dues = [due for due, _created, _reference in found]
    assert len(set(dues)) == len(dues)
    assert all(later - earlier == EVERY for earlier, later in pairwise(dues)), dues
    assert all(due.timestamp() % EVERY.total_seconds() == 0 for due in dues)


def holder_pid() -> int:
    lease = wait_for(lambda: SweepLease.objects.filter(name=LEASE, holder__isnull=False)
                     .values_list("holder", flat=True).first(), timeout=10,
                     message="a sweeper to hold the lease")
    return int(lease.split(":")[1])


def test_two_clusters_make_one_instance_per_due_time_and_go_on_when_the_sweepers_stops():
    with ExitStack() as stack:
        clusters = [stack.enter_context(background("orm", DWF_TEST_SCHEDULES="1"))
                    for _ in range(2)]
        found = wait_for(at_least(4), timeout=20, message="four runs of the schedule")

        assert_one_per_due_time_without_a_gap(found)
        late = [created - due for due, created, _ in found[1:]]  # the first: a cluster's start
        assert max(late) < LATE, late

        # The cluster whose worker sweeps stops (SIGTERM); the other takes the lease over.
        pid = holder_pid()
        leading = next(c for c in clusters if os.getpgid(pid) == c.popen.pid)
        leading.stop()
        follower = next(c for c in clusters if c is not leading)
        after = wait_for(at_least(len(found) + 3), timeout=20,
                         message="three more runs after the handover")
        assert follower.popen.poll() is None

    assert_one_per_due_time_without_a_gap(after)
    row = WorkflowSchedule.objects.get(pk=every_two_seconds.id)
    assert row.last_due_at >= after[-1][0] and row.skipped == 0
    assert WorkflowInstance.objects.filter(workflow="scheduled-tick").exclude(
        status="completed").count() == 0
