"""The sweepers in a real qcluster's workers: deadlines fire on time with nothing but
``qcluster`` running, no worker is held while nothing is due, and a killed
sweeper is taken over.

The cluster (tests/qcluster.py) has no ``workflows_sweep`` beside it: whatever
fires here, its workers' sweeper threads fired.
"""

from __future__ import annotations

import os
import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from django_workflows import services
from django_workflows.models import (
    Attempt,
    AttemptStatus,
    Deadline,
    SweepLease,
    WorkflowEvent,
    WorkflowInstance,
)
from django_workflows.runners.sweeper_thread import LEASE_TTL
from django_workflows.services.sweep import LEASE
from tests.qcluster import wait_for
from tests.testapp.models import Note


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def notes() -> list[str]:
    return list(Note.objects.values_list("text", flat=True))


pytestmark = [pytest.mark.real_locks, pytest.mark.needs_q2,
              pytest.mark.django_db(transaction=True)]


def lease() -> SweepLease | None:
    return SweepLease.objects.filter(name=LEASE).first()


def a_sweeper_holds_the_lease() -> SweepLease | None:
    held = lease()
    return held if held and held.held_until and held.held_until > timezone.now() else None


def test_a_step_timeout_fires_within_a_second_with_only_qcluster_running(cluster):
    instance = services.create("bg-timeout", state={"sleep": 3}, start=True)
    due_at = wait_for(lambda: Deadline.objects.filter(
        instance=instance, kind="step-timeout").values_list("due_at", flat=True).first(),
        timeout=10, message="the step's deadline")

    wait_for(lambda: reload(instance).status == "failed", timeout=15,
             message="the step to time out")
    error = WorkflowEvent.objects.get(instance=instance, type="error")
    assert timedelta(0) <= error.created_at - due_at < timedelta(seconds=1)
    assert reload(instance).errors == ['Workflow step "work" timed out after 1s']


def test_the_workers_record_that_they_sweep(cluster):
    held = wait_for(a_sweeper_holds_the_lease, timeout=10, message="a sweeper to hold the lease")
    first = held.swept_at
    later = wait_for(lambda: (row := lease()) and row.swept_at > first and row, timeout=10,
                     message="the lease to be renewed")
    assert timezone.now() - later.swept_at < timedelta(seconds=5)
    assert str(cluster.popen.pid) not in held.holder  # a worker holds it, not qcluster's main


def test_an_idle_sweeper_holds_no_worker(enqueue_to, clusters):
    """One worker only: its sweeper sleeps beside it, and work queued now starts at once."""
    one = clusters.start(enqueue_to, workers="1")
    assert one.popen.poll() is None
    wait_for(a_sweeper_holds_the_lease, timeout=10, message="the sweeper to start")
    waits = []
    for _ in range(3):
        finished = Attempt.objects.filter(instance=services.create("bg-retrying", start=True),
                                          status=AttemptStatus.FINISHED)
        attempt = wait_for(finished.first, timeout=10, message="the operation to run")
        waits.append((attempt.claimed_at - attempt.enqueued_at).total_seconds())
    assert max(waits) < 2, waits
    clusters.stop()


def test_a_killed_sweeper_is_taken_over_and_recovers_its_own_workers_attempt(enqueue_to,
                                                                           clusters):
    """Both workers busy, the one that sweeps is killed: another takes the lease over,
    interrupts the dead worker's attempt and fires deadlines as before.

    (It is killed while it runs a task: a django-q2 worker killed while idle may hold
    its task queue's lock, and that cluster then takes no more tasks, sweeper or not.)
    """
    running = clusters.start(enqueue_to)
    counters = [services.create("bg-progress", state={"steps": 60, "tick": 0.2}, start=True)
                for _ in range(2)]
    busy = Attempt.objects.filter(instance__in=counters, status=AttemptStatus.RUNNING)
    wait_for(lambda: busy.count() == 2, timeout=15, message="both workers to be busy")
    held = wait_for(a_sweeper_holds_the_lease, timeout=10, message="a sweeper to hold the lease")
    pid = held.holder.split(":")[1]
    killed = busy.get(worker__endswith=f":{pid}")
    os.kill(int(pid), signal.SIGKILL)

    taken = wait_for(lambda: (row := a_sweeper_holds_the_lease()) and row.holder != held.holder
                     and row, timeout=LEASE_TTL + 10, message="another sweeper to take over")
    assert taken.holder.split(":")[1] != pid
    wait_for(lambda: Attempt.objects.get(pk=killed.pk).status == AttemptStatus.INTERRUPTED,
             timeout=15, message="the dead worker's attempt to be interrupted")
    timing_out = services.create("bg-timeout", state={"sleep": 2}, start=True)
    wait_for(lambda: reload(timing_out).status == "failed", timeout=15,
             message="a step to time out after the takeover")
    assert running.popen.poll() is None
    for instance in counters:
        services.cancel(instance)
    clusters.stop()


def test_a_cluster_that_stops_hands_the_lease_on(enqueue_to, clusters):
    clusters.start(enqueue_to)
    wait_for(a_sweeper_holds_the_lease, timeout=10, message="a sweeper to hold the lease")

    clusters.stop()  # SIGTERM: the workers exit cleanly
    assert lease().held_until is None
