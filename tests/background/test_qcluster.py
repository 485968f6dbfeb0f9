"""Background work on real workers, on every runner: a django-q2 cluster with the ORM broker
and with Redis, and the Tasks runner on the database backend and on RQ.

Every test drives real processes: a ``manage.py qcluster`` (two workers, which sweep
by themselves; tests/qcluster.py), or two ``db_worker`` or ``rqworker`` processes with
nothing else running (tests/tasks_workers.py), against the test database
on PostgreSQL or MariaDB/MySQL, which they share with real row locks. The children
write a heartbeat every 0.5 s and count an attempt as interrupted after 3 s without
one. Operations talk back through ``Note`` rows (tests/testapp/background.py); the
tests poll rows with deadlines.

One cluster serves every test of a runner; only the tests that kill it or need
it stopped start another. Each test waits until no attempt is queued or running
before the database is flushed, so no late work leaks into the next test.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from bench import invariants
from django_workflows import services
from django_workflows.engine.messages import INTERRUPTED_OPERATION, INTERRUPTED_WORKFLOW
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import Attempt, AttemptStatus, WorkflowInstance
from django_workflows.reading.queries import live_operations
from django_workflows.runners.django_q import TASK
from tests.background.conftest import BROKERS, REDIS, RUNNERS
from tests.qcluster import redis_queue_key, wait_for
from tests.tasks_workers import BACKENDS, queue_name
from tests.testapp.models import Note

pytestmark = [pytest.mark.real_locks,
              pytest.mark.django_db(transaction=True)]

# -- helpers ----------------------------------------------------------------------------------


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def operation(instance: WorkflowInstance, operation_id: str) -> dict[str, Any]:
    return next(op for op in instance.operations if op["id"] == operation_id)


def notes() -> list[str]:
    return list(Note.objects.order_by("pk").values_list("text", flat=True))


def attempts(instance: WorkflowInstance, target: str) -> list[Attempt]:
    return list(Attempt.objects.filter(instance=instance, target=target).order_by("enqueued_at"))


def until(instance: WorkflowInstance, condition: Callable[[WorkflowInstance], Any],
          what: str, timeout: float = 20.0) -> WorkflowInstance:
    """Poll ``instance`` until ``condition`` holds; say where it stood if it never did."""
    try:
        wait_for(lambda: condition(reload(instance)), timeout=timeout, message=what)
    except AssertionError as error:
        row = reload(instance)
        raise AssertionError(
            f"{error}; the instance is {row.status} at {row.current_step!r}, errors "
            f"{row.errors}, operations {row.operations}, branches {row.parallel}, rollback "
            f"{row.snap.rollback}, attempts "
            f"{list(Attempt.objects.filter(instance=row).values_list('target', 'status'))}, "
            f"notes {notes()}") from None
    return reload(instance)


def at_step(step: str) -> Callable[[WorkflowInstance], bool]:
    return lambda row: row.status == "running" and row.current_step == step


def refused(call: Callable[..., Any], *args: Any) -> WorkflowNotMoved:
    with pytest.raises(WorkflowNotMoved) as caught:
        call(*args)
    return caught.value


def running_attempt(instance: WorkflowInstance, target: str) -> Attempt:
    """The attempt of ``target`` once it is running and has reported progress."""
    return wait_for(lambda: Attempt.objects.filter(
        instance=instance, target=target, status=AttemptStatus.RUNNING,
        progress__isnull=False).first(), timeout=20, message=f"{target} to report progress")


# -- the shared cluster -----------------------------------------------------------------------


@pytest.fixture(scope="module", params=RUNNERS)
def broker(request: pytest.FixtureRequest) -> str:
    """Every runner: django-q2's brokers and the Tasks backends."""
    return request.param


def test_an_operation_that_fails_twice_succeeds_on_its_third_attempt(cluster):
    instance = services.create("bg-retrying", state={"fail_times": 2}, start=True)

    row = until(instance, at_step("done"), "the workflow to reach done")

    flaky = operation(row, "flaky")
    assert (flaky["status"], flaky["attempt"], flaky["result"]) == ("succeeded", 3,
                                                                   {"attempt": 3})
    assert notes() == ["flaky attempt 1", "flaky attempt 2", "flaky attempt 3"]
    assert [(a.number, a.status) for a in attempts(row, "flaky")] == [
        (1, "finished"), (2, "finished"), (3, "finished")]


@pytest.mark.needs_q2
@pytest.mark.parametrize("broker", BROKERS, scope="module")
def test_our_rows_are_the_record_of_a_finished_operation_django_q2_saves_none(cluster):
    from django_q.models import Task
    from django_q.tasks import async_task

    instance = services.create("bg-retrying", state={"fail_times": 0}, start=True)
    row = until(instance, at_step("done"), "the workflow to reach done")
    # A task of django-q2's own, after ours: once its result is saved, ours was handled.
    marker = async_task("math.floor", 1.5)
    wait_for(lambda: Task.objects.filter(id=marker, success=True).exists(),
             message="the monitor to save the marker task's result")

    assert [(a.number, a.status) for a in attempts(row, "flaky")] == [(1, "finished")]
    # The attempt's row is the record: django-q2's monitor writes no second one.
    assert not Task.objects.filter(func=TASK).exists()


def test_progress_of_a_running_operation_is_visible_from_another_connection(cluster):
    instance = services.create("bg-progress", state={"steps": 20, "tick": 0.2}, start=True)
    seen: list[int] = []
    logs_seen: list[int] = []

    def progress_grew() -> bool:
        attempt = Attempt.objects.filter(instance=instance).first()
        if attempt is None or attempt.status != AttemptStatus.RUNNING or not attempt.progress:
            return False
        current = attempt.progress["current"]
        if current < 20 and (not seen or current != seen[-1]):  # 20: it is done
            seen.append(current)
            logs_seen.append(len(attempt.logs))
        return len(seen) >= 2

    wait_for(progress_grew, timeout=20, interval=0.05, message="progress to grow mid-run")
    # As people see it (the API and the admin read the attempt's row while it runs).
    (live,) = live_operations(reload(instance))
    assert live.operation.status == "running"
    assert live.operation.progress.current >= seen[-1]
    assert seen == sorted(seen) and len(set(seen)) == 2
    assert logs_seen == sorted(logs_seen) and logs_seen[0] >= 1
    row = until(instance, at_step("done"), "the counter to finish")
    assert operation(row, "count")["progress"] == {"current": 20, "total": 20,
                                                    "message": "tick 20"}


def test_a_step_timeout_fails_the_step_and_drops_the_late_result(cluster):
    instance = services.create("bg-timeout", state={"sleep": 3.5}, start=True)
    message = 'Workflow step "work" timed out after 1s'

    row = until(instance, lambda row: row.status == "failed", "the step to time out")
    assert row.errors == [message]
    assert refused(services.retry, instance).code == "still_stopping"

    wait_for(lambda: "sleeper finished" in notes(), timeout=10, message="the late finish")
    attempt = wait_for(lambda: Attempt.objects.filter(
        instance=instance, status=AttemptStatus.DROPPED).first(), timeout=10,
        message="the late attempt to be dropped")
    assert attempt.stop_reason == message
    row = reload(instance)
    sleep = operation(row, "sleep")
    assert (row.status, row.errors) == ("failed", [message])
    assert (sleep["status"], sleep["result"]) == ("cancelled", None)
    assert sleep["error"]["message"] == message

    services.update_state(instance, {"sleep": 0.1})
    services.retry(instance)
    row = until(instance, at_step("done"), "the retried step to succeed")
    assert operation(row, "sleep")["result"] == {"late": True}


def test_retry_reruns_only_the_failed_branch(cluster):
    instance = services.create("bg-branches", state={"failing_branches": ["b"]}, start=True)

    row = until(instance, lambda row: row.status == "failed", "the branch to fail")
    assert row.errors == ['Parallel workflow step "fan" failed', 'Branch "b": branch b broke']
    assert Counter(notes()) == {"branch a": 1, "branch b": 1, "branch c": 1}

    Note.objects.create(text="branch b fixed")
    services.retry(instance)

    row = until(instance, at_step("done"), "the fixed branch to let the step move on")
    assert Counter(notes()) == {"branch a": 1, "branch b": 2, "branch c": 1,
                                "branch b fixed": 1}
    assert {b["id"]: b["status"] for b in row.parallel} == {
        "a": "succeeded", "b": "succeeded", "c": "succeeded"}


def test_a_nested_child_completes_by_itself_and_advances_its_parent(cluster):
    parent = services.create("bg-parent", start=True)

    row = until(parent, at_step("done"), "the parent to move on")

    child = WorkflowInstance.objects.get(parent=parent)
    assert (child.workflow, child.status) == ("bg-child", "completed")
    assert operation(child, "child-op")["status"] == "succeeded"
    assert row.completed_steps == ["wait-child"]
    assert notes() == ["child op"]


def test_cancel_stops_a_running_operation_within_seconds(cluster):
    instance = services.create("bg-progress", state={"steps": 100, "tick": 0.1}, start=True)
    attempt = running_attempt(instance, "count")

    services.cancel(instance)
    cancelled_at = time.monotonic()
    stopped = wait_for(lambda: Attempt.objects.filter(
        pk=attempt.pk, status__in=(AttemptStatus.FINISHED, AttemptStatus.DROPPED)).first(),
        timeout=5, interval=0.05, message="the attempt to stop")

    assert time.monotonic() - cancelled_at < 5
    assert stopped.stop_reason == "Cancelled"
    row = reload(instance)
    assert row.status == "cancelled"
    assert operation(row, "count")["status"] == "cancelled"
    assert "slow counter finished" not in notes()


def test_rollback_runs_in_order_and_resumes_after_its_worker_was_killed(cluster):
    instance = services.create("bg-rollback", start=True)
    until(instance, at_step("end"), "the workflow to reach its last step")

    services.rollback(instance)
    # The first compensation ("second") kills its own worker: the heartbeat expires.
    row = until(instance, lambda row: INTERRUPTED_WORKFLOW in row.errors,
                "the dead compensation to be interrupted")
    assert row.status == "rolling-back"
    assert [a.status for a in attempts(row, "operation:second")] == ["interrupted"]

    services.rollback(instance)
    row = until(instance, lambda row: row.status == "idle", "the resumed rollback to finish")

    assert notes() == ["compensation died", "compensate second", "compensate first",
                       "compensate y", "compensate x", "compensate step two",
                       "compensate step one"]
    assert (row.current_step, row.history, row.operations, row.errors) == ("", [], [], [])


def overlapping(rows: list[Attempt]) -> int:
    """The most attempts of ``rows`` that ran at once, by their claims and ends."""
    return invariants.most_at_once((a.claimed_at, a.finished_at) for a in rows)


def test_a_limited_operation_runs_one_per_tenant_while_workers_are_free(cluster):
    instances = [services.create("bg-limited", state={"tenant": tenant, "n": n, "sleep": 0.3},
                                 start=True) for n in range(4) for tenant in (1, 2)]

    for instance in instances:
        until(instance, at_step("done"), "every limited operation to finish")
    rows = list(Attempt.objects.filter(target="call"))
    assert {a.status for a in rows} == {AttemptStatus.FINISHED}
    by_tenant = Counter(a.limit_key for a in rows)
    assert by_tenant == {"tenant-1": 4, "tenant-2": 4}
    # Two workers, two tenants: one of each at a time, never two of one tenant.
    for key in by_tenant:
        assert overlapping([a for a in rows if a.limit_key == key]) == 1
    assert overlapping(rows) == 2


# -- tests that stop or kill the cluster ------------------------------------------------------


def test_a_worker_killed_holding_a_slot_frees_it_when_its_attempt_is_recovered(cluster):
    dying = services.create("bg-limited", state={"tenant": 3, "die": True}, start=True)
    until(dying, lambda row: "limited died" in notes(), "the limited operation to kill its worker")
    waiting = services.create("bg-limited", state={"tenant": 3, "n": 1}, start=True)
    (held,) = Attempt.objects.filter(instance=waiting)
    assert held.status == AttemptStatus.WAITING

    row = until(dying, lambda row: row.status == "failed", "the heartbeat to expire")
    assert row.errors == [INTERRUPTED_WORKFLOW]
    until(waiting, at_step("done"), "the waiting operation to get the freed slot")
    assert notes() == ["limited died", "limited 1"]
    assert [a.status for a in Attempt.objects.filter(limit_key="tenant-3")
            .order_by("enqueued_at")] == [AttemptStatus.INTERRUPTED, AttemptStatus.FINISHED]


def test_kill_9_of_the_cluster_interrupts_the_operation_and_retry_completes_it(
        enqueue_to, clusters, transactional_db):
    clusters.get(enqueue_to)
    instance = services.create("bg-interruptible", state={"steps": 15, "tick": 0.2},
                               start=True)
    running_attempt(instance, "count")

    # SIGKILL to the whole process group, workers and all (Tasks: every process running Tasks)
    clusters.current.kill()
    clusters.start(enqueue_to)

    row = until(instance, lambda row: row.status == "failed", "the heartbeat to expire")
    count = operation(row, "count")
    assert row.errors == [INTERRUPTED_WORKFLOW]
    assert (count["status"], count["error"]) == (
        "failed", {"name": "OperationInterruptedError", "message": INTERRUPTED_OPERATION})
    assert operation(row, "prepare")["status"] == "succeeded"

    services.retry(instance)
    row = until(instance, at_step("done"), "the retried operation to finish")
    assert notes() == ["prepared", "slow counter finished"]
    assert [a.status for a in attempts(row, "count")] == ["interrupted", "finished"]
    assert [a.status for a in attempts(row, "prepare")] == ["finished"]


def test_work_queued_in_a_broker_that_was_flushed_is_handed_out_again(
        enqueue_to, clusters, transactional_db):
    clusters.stop()
    instance = services.create("bg-retrying", start=True)
    (attempt,) = Attempt.objects.filter(instance=instance)
    assert attempt.status == AttemptStatus.QUEUED
    flush(enqueue_to)

    clusters.start(enqueue_to, DWF_REDISPATCH_AFTER="1")
    until(instance, at_step("done"), "the lost work to be done")

    assert notes() == ["flaky attempt 1"]
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.FINISHED
    assert attempt.claimed_at is not None and attempt.claimed_at > attempt.enqueued_at


def flush(broker: str) -> None:
    if broker in BACKENDS:
        lose_attempt_tasks(broker)
    elif broker == "redis":
        import redis

        client = redis.Redis(**REDIS)  # shared with other runs: flush only our queue
        assert client.llen(redis_queue_key()) == 1
        client.delete(redis_queue_key())
    else:
        from django_q.models import OrmQ

        assert OrmQ.objects.count() == 1
        OrmQ.objects.all().delete()


def lose_attempt_tasks(broker: str) -> None:
    """The backend loses the attempt's Task (the sweep's own Task, in the same queue, stays:
    losing it is tests/background/test_tasks_runner.py's)."""
    from django_workflows.runners.tasks.tasks import run_attempt

    if broker == "tasks-db":
        from django_tasks_db.models import DBTaskResult

        assert DBTaskResult.objects.filter(task_path=run_attempt.module_path).delete()[0] == 1
    else:
        import django_rq

        queue = django_rq.get_queue(queue_name())
        (job_id,) = [job.id for job in queue.jobs if job.func_name == run_attempt.module_path]
        queue.remove(job_id)


# -- the schedule of earlier versions --------------------------------------------------------


@pytest.mark.needs_q2
def test_workflows_schedule_removes_the_schedule_earlier_versions_installed():
    from django_q.models import Schedule

    Schedule.objects.create(name="django-workflows sweep",
                            func="django_workflows.runners.django_q.tasks.sweep_loop",
                            schedule_type=Schedule.MINUTES, minutes=1, repeats=-1)
    first, second = StringIO(), StringIO()
    call_command("workflows_schedule", stdout=first)
    call_command("workflows_schedule", stdout=second)

    assert not Schedule.objects.exists()
    assert "Removed" in first.getvalue() and "No schedule to remove" in second.getvalue()
    assert "sweep by themselves" in second.getvalue()

