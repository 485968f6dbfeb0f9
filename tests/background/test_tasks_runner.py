"""The Tasks runner with real workers and nothing else running: `db_worker` processes of the
database backend (PostgreSQL, MariaDB and SQLite) and `rqworker` processes over Redis
(tests/tasks_workers.py). What the django-q2 tests check on every runner is in
test_qcluster.py; here, what is the Tasks runner's own: its sweep, which nothing but the
workers runs, the backend's part in a crash, and what it keeps.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.core.checks import run_checks
from django.utils import timezone

from django_workflows import services
from django_workflows.engine.messages import INTERRUPTED_OPERATION, INTERRUPTED_WORKFLOW
from django_workflows.models import Attempt, AttemptStatus, SweepLease, WorkflowInstance
from django_workflows.services.sweep import LEASE
from tests.background.conftest import TASKS_RUNNERS
from tests.qcluster import wait_for
from tests.testapp.models import Note

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module", params=TASKS_RUNNERS)
def broker(request: pytest.FixtureRequest) -> str:
    return request.param


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def notes() -> list[str]:
    return list(Note.objects.order_by("pk").values_list("text", flat=True))


def operation(instance: WorkflowInstance, operation_id: str) -> dict:
    return next(op for op in instance.operations if op["id"] == operation_id)


def until(instance: WorkflowInstance, condition, what: str, timeout: float = 20.0
          ) -> WorkflowInstance:
    wait_for(lambda: condition(reload(instance)), timeout=timeout, message=what)
    return reload(instance)


def swept_lately() -> SweepLease | None:
    row = SweepLease.objects.filter(name=LEASE).first()
    recent = timezone.now() - timedelta(seconds=3)
    return row if row and row.swept_at and row.swept_at > recent else None


def test_an_operation_runs_on_the_backends_worker(cluster):
    instance = services.create("bg-retrying", state={"fail_times": 1}, start=True)

    row = until(instance, lambda row: row.current_step == "done", "the workflow to reach done")

    assert operation(row, "flaky")["attempt"] == 2
    assert notes() == ["flaky attempt 1", "flaky attempt 2"]


def test_a_step_timeout_fires_with_nothing_but_the_workers_running(cluster):
    instance = services.create("bg-timeout", state={"sleep": 3}, start=True)

    row = until(instance, lambda row: row.status == "failed", "the step to time out",
                timeout=15)

    assert row.errors == ['Workflow step "work" timed out after 1s']
    assert wait_for(swept_lately, timeout=5, message="a recent sweep")
    assert not [m for m in run_checks(databases=["default"])
                if m.id == "django_workflows.W030"]


def test_kill_9_of_the_worker_running_an_attempt_is_recovered_and_not_run_twice(
        enqueue_to, clusters, transactional_db):
    clusters.get(enqueue_to)
    instance = services.create("bg-interruptible", state={"steps": 15, "tick": 0.2},
                               start=True)
    running = wait_for(lambda: Attempt.objects.filter(
        instance=instance, target="count", status=AttemptStatus.RUNNING,
        progress__isnull=False).first(), timeout=20, message="the counter to report progress")

    clusters.current.kill_worker_of(running)  # the other worker goes on, and sweeps
    killed_at = time.monotonic()

    row = until(instance, lambda row: row.status == "failed", "the heartbeat to expire")
    assert time.monotonic() - killed_at < 3 + 10  # HEARTBEAT_TIMEOUT 3 s, then a sweep
    assert row.errors == [INTERRUPTED_WORKFLOW]
    assert operation(row, "count")["error"] == {"name": "OperationInterruptedError",
                                                "message": INTERRUPTED_OPERATION}
    services.retry(instance)  # to the worker that is left (RQ's main process forks another)
    row = until(instance, lambda row: row.current_step == "done", "the retried counter")
    assert notes() == ["prepared", "slow counter finished"]
    assert [a.status for a in Attempt.objects.filter(instance=instance, target="count")
            .order_by("enqueued_at")] == ["interrupted", "finished"]


def test_an_operations_own_timeout_tells_the_running_work_to_stop(cluster):
    instance = services.create("bg-op-timeout", state={"steps": 50, "tick": 0.2}, start=True)

    row = until(instance, lambda row: row.status == "failed", "the operation to time out")
    attempt = wait_for(lambda: Attempt.objects.filter(
        instance=instance, status__in=(AttemptStatus.FINISHED, AttemptStatus.DROPPED)).first(),
        timeout=10, message="the attempt to stop")

    count = operation(row, "count")
    assert (count["status"], count["error"]["message"]) == ("failed",
                                                            "Operation timed out after 1s")
    assert attempt.progress["current"] < 50
    time.sleep(0.5)  # the counter would have gone on ticking
    assert "slow counter finished" not in notes()


def test_the_workers_keep_the_sweep_recorded_with_nothing_else_running(cluster):
    services.create("bg-retrying", start=True)  # a Task in a worker: its sweeper starts
    first = wait_for(swept_lately, timeout=10, message="a sweep")

    later = wait_for(lambda: (row := swept_lately()) and row.swept_at > first.swept_at and row,
                     timeout=10, message="the sweep to be recorded again")

    if cluster.runner != "tasks-rq-fork":  # a sweeper thread in a worker leads
        assert int(later.holder.split(":")[1]) in cluster.pids()
    else:  # RQ's default worker forks a process per Task: the chain of sweep Tasks sweeps
        assert later.holder.startswith("tasks:")


def test_chains_started_again_and_again_end_but_one(cluster):
    from django_workflows.runners.tasks.sweep_chain import CHAIN, start_chain

    for _ in range(4):
        start_chain()

    # Each extra chain ends at its next run, which waits its turn in the backend's queue
    # (RQ's scheduler moves a deferred one over once a second): seconds, more on a busy
    # machine, hence the wide deadline.
    try:
        wait_for(lambda: pending_sweeps(cluster.runner) <= 1, timeout=45,
                 message="the extra chains to end")
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; waiting: {pending_sweep_runs(cluster.runner)}") \
            from None
    time.sleep(1)  # and none comes back
    assert pending_sweeps(cluster.runner) <= 1
    assert SweepLease.objects.get(name=CHAIN).held_until > timezone.now()


def test_where_operations_and_a_sites_own_task_run(enqueue_to, clusters, transactional_db):
    """db_worker and our RQ worker run operations in the worker's own process, on the
    connection it keeps (CONN_MAX_AGE); RQ's default worker in a process forked for each.
    A site's own Task on RQ runs in a forked process with a connection of its own, and the
    worker goes on with its operations afterwards."""
    workers = clusters.get(enqueue_to, DWF_TEST_CONN_MAX_AGE="600")

    def run_one() -> tuple[int, str]:
        before = len(notes())
        instance = services.create("bg-where", start=True)
        until(instance, lambda row: row.current_step == "done", "the operation")
        (new,) = notes()[before:]
        return ran_at(new)

    seen = [run_one() for _ in range(4)]

    pids = {pid for pid, _ in seen}
    if enqueue_to == "tasks-rq-fork":
        assert not pids & set(workers.pids()) and len(pids) == 4, seen
    else:
        assert pids <= set(workers.pids()), seen
        sessions = {pid: {session for p, session in seen if p == pid} for pid in pids}
        assert all(len(kept) == 1 for kept in sessions.values()), seen
    if enqueue_to == "tasks-db":
        return

    from tests.testapp.tasks import note_where

    note_where.enqueue()
    said = wait_for(lambda: [n for n in notes() if n.startswith("task ")], timeout=20,
                    message="the site's own Task to run")
    pid, session = ran_at(said[0])
    assert pid not in workers.pids()
    if session != "none":
        assert session not in {s for _, s in seen}  # never a worker's connection
    after, _ = run_one()
    assert (after in workers.pids()) is (enqueue_to == "tasks-rq")


@pytest.mark.needs_tasks  # not a parametrised test: it takes the extra's mark itself
def test_our_rq_worker_sweeps_from_its_start_with_nothing_queued(clusters, transactional_db):
    """Workers started after a crash, with no Task queued and RQ's scheduler perhaps still
    locked by a dead worker: ours sweep at once (RQ's default worker waits for a Task)."""
    from tests.tasks_workers import clear_rq_queue

    clusters.stop()
    clear_rq_queue()  # no chain of sweep Tasks is left to wake a worker
    assert pending_sweeps("tasks-rq") == 0
    workers = clusters.start("tasks-rq")

    def swept_by_a_thread() -> SweepLease | None:
        row = swept_lately()
        return row if row and not row.holder.startswith("tasks:") else None

    swept = wait_for(swept_by_a_thread, timeout=10, message="a sweep with nothing queued")
    assert int(swept.holder.split(":")[1]) in workers.pids()


def ran_at(said: str) -> tuple[int, str]:
    """``(pid, database session)`` from a note of ``testapp.background.process_and_session``."""
    fields = dict(part.split("=") for part in said.split()[1:])
    return int(fields["pid"]), fields["db"]


def pending_sweeps(runner: str) -> int:
    """Runs of the sweep's chain waiting in the backend (queued or deferred)."""
    return len(pending_sweep_runs(runner))


def pending_sweep_runs(runner: str) -> list[str]:
    """Each run of the sweep's chain waiting in the backend: its chain and when it is due."""
    from django_workflows.runners.tasks.sweep_chain import chain_run

    if runner == "tasks-db":
        from django_tasks_db.models import DBTaskResult

        return [f"{row.args_kwargs} after {row.run_after}" for row in DBTaskResult.objects.filter(
            task_path=chain_run.module_path, status="READY")]
    import django_rq
    from rq.registry import ScheduledJobRegistry

    from tests.tasks_workers import queue_name

    queue = django_rq.get_queue(queue_name())
    scheduled = ScheduledJobRegistry(queue=queue)
    jobs = [queue.fetch_job(id) for id in [*queue.job_ids, *scheduled.get_job_ids()]]
    return [f"{job.kwargs} {job.get_status()}{due_in(scheduled, job)}"
            for job in jobs if job is not None and job.func_name == chain_run.module_path]


def due_in(scheduled: Any, job: Any) -> str:
    """When a deferred RQ job is due; one long overdue says RQ's scheduler moves none (its
    lock held by a worker killed -9: tests/background/conftest.py)."""
    if job.id not in scheduled:
        return ""
    at = scheduled.get_scheduled_time(job)
    late = (timezone.now() - at).total_seconds()
    return f" at {at:%H:%M:%S}" + (f", {late:.0f} s overdue" if late > 2 else "")
