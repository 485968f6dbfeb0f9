"""Background work through the service: handed out after commit, run, recorded; the sweep.

The ``back-office`` workflow: ``pay`` (auto, operation ``charge``: progress,
a log line, result ``{"charge": "ch_1"}``, rollback "refund ...") -> ``ship``
(auto, branches ``stock`` (compensate "unstock") and ``courier``) -> ``done``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from django_workflows import Operation, Step, Workflow, registry, services
from django_workflows.engine import AttemptOutcome
from django_workflows.models import Attempt, Deadline, WorkflowInstance
from django_workflows.reading.queries import live_operations
from tests.testapp import workflows as testapp

pytestmark = pytest.mark.django_db(transaction=True)

IMMEDIATE = "django_workflows.runners.immediate.Runner"
HOLDING = "tests.services.test_background.HoldingRunner"
HEARTBEAT_TIMEOUT = 60.0


class HoldingRunner:
    """A runner whose workers never come: it only keeps the tokens it was given."""

    held: list[str] = []

    def enqueue(self, tokens: Sequence[str]) -> None:
        HoldingRunner.held.extend(tokens)


def runner(path: str) -> override_settings:
    return override_settings(DJANGO_WORKFLOWS={"RUNNER": path,
                                               "HEARTBEAT_TIMEOUT": HEARTBEAT_TIMEOUT})


@pytest.fixture(autouse=True)
def clean_calls():
    testapp.calls.clear()
    HoldingRunner.held.clear()
    yield
    testapp.calls.clear()
    HoldingRunner.held.clear()


@pytest.fixture
def slow_step():
    """A step with a 30s timeout whose operation a worker would run."""
    definition = Workflow(id="slow-step", steps=[
        Step("work", timeout=30, operations=[Operation("op", run=lambda ctx: "ok")])])
    registry.register(definition, origin="tests.services.test_background")
    yield definition
    registry.unregister(definition.id)


def row_of(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def operation(row: WorkflowInstance, operation_id: str) -> dict:
    return next(op for op in row.operations if op["id"] == operation_id)


def done_back_office() -> WorkflowInstance:
    with runner(IMMEDIATE):
        return services.create("back-office", start=True)


# -- running to the end ---------------------------------------------------------------------


def test_back_office_runs_to_done_after_commit():
    instance = done_back_office()

    row = row_of(instance)
    assert (row.status, row.current_step) == ("running", "done")
    assert row.completed_steps == ["pay", "ship"]
    assert row.history == ["pay", "ship", "done"]


def test_the_operations_result_progress_and_logs_are_saved():
    row = row_of(done_back_office())

    charge = operation(row, "charge")
    assert (charge["status"], charge["result"]) == ("succeeded", {"charge": "ch_1"})
    assert charge["progress"] == {"current": 1, "total": 2, "message": "charging"}
    assert charge["logs"] == ["charged"]


def test_the_workers_progress_and_logs_are_saved_on_the_attempt_row():
    done_back_office()

    attempt = Attempt.objects.get(kind="operation", target__contains="charge")
    assert attempt.logs == ["charged"]
    assert attempt.progress == {"current": 1, "total": 2, "message": "charging"}


def test_the_branches_succeeded():
    row = row_of(done_back_office())

    assert {(b["id"], b["status"]) for b in row.parallel} == {
        ("stock", "succeeded"), ("courier", "succeeded")}
    assert sorted(testapp.calls) == ["courier", "stock"]


def test_every_attempt_row_is_finished():
    done_back_office()

    attempts = Attempt.objects.order_by("enqueued_at")
    assert [a.kind for a in attempts] == ["operation", "branch", "branch"]
    assert {a.status for a in attempts} == {"finished"}
    assert all(a.claimed_at and a.finished_at for a in attempts)


def test_work_is_handed_out_only_after_commit():
    with runner(IMMEDIATE):
        with transaction.atomic():
            instance = services.create("back-office", start=True)
            assert list(Attempt.objects.values_list("status", flat=True)) == ["queued"]
            assert operation(row_of(instance), "charge")["status"] == "queued"
            assert testapp.calls == []
        assert row_of(instance).current_step == "done"


def test_work_of_a_rolled_back_transaction_is_never_handed_out():
    with runner(HOLDING), pytest.raises(RuntimeError), transaction.atomic():
        services.create("back-office", start=True)
        raise RuntimeError("the caller gives up")

    assert HoldingRunner.held == []
    assert not Attempt.objects.exists()


def test_only_attempt_tokens_are_handed_to_the_runner():
    with runner(HOLDING):
        instance = services.create("back-office", start=True)

    assert HoldingRunner.held == list(Attempt.objects.filter(instance=instance.pk)
                                      .values_list("token", flat=True))
    assert all(isinstance(token, str) for token in HoldingRunner.held)


# -- rollback -------------------------------------------------------------------------------


def test_rollback_runs_the_refund_then_the_unstock():
    instance = done_back_office()
    testapp.calls.clear()

    with runner(IMMEDIATE):
        services.rollback(instance)

    assert testapp.calls == ["refund {'charge': 'ch_1'}", "unstock"]


def test_rollback_ends_idle_with_no_operations():
    instance = done_back_office()

    with runner(IMMEDIATE):
        services.rollback(instance)

    row = row_of(instance)
    assert (row.status, row.current_step, row.operations, row.history) == ("idle", "", [], [])


# -- the sweep: deadlines -------------------------------------------------------------------


def held_slow_step() -> WorkflowInstance:
    with runner(HOLDING):
        return services.create("slow-step", start=True)


def make_due(instance) -> None:
    Deadline.objects.filter(instance=instance.pk).update(
        due_at=timezone.now() - timedelta(seconds=1))


def test_a_step_with_a_timeout_gets_a_deadline_row(slow_step):
    before = timezone.now()
    instance = held_slow_step()

    deadline = Deadline.objects.get(instance=instance.pk)
    assert deadline.kind == "step-timeout"
    assert timedelta(seconds=29) < deadline.due_at - before < timedelta(seconds=31)


def test_sweep_fires_a_due_step_timeout(slow_step):
    instance = held_slow_step()
    make_due(instance)

    with runner(HOLDING):
        report = services.sweep()

    assert report.fired == 1
    row = row_of(instance)
    assert (row.status, row.errors) == ("failed", ['Workflow step "work" timed out after 30s'])
    assert not Deadline.objects.exists()


def test_a_fired_step_timeout_drops_the_unclaimed_attempt(slow_step):
    instance = held_slow_step()
    make_due(instance)

    with runner(HOLDING):
        services.sweep()

    assert list(Attempt.objects.filter(instance=instance.pk)
                .values_list("status", flat=True)) == ["dropped"]
    assert operation(row_of(instance), "op")["status"] == "cancelled"


def test_sweep_leaves_a_deadline_that_is_not_due(slow_step):
    instance = held_slow_step()

    with runner(HOLDING):
        report = services.sweep()

    assert report.fired == 0
    assert row_of(instance).status == "running"
    assert Deadline.objects.filter(instance=instance.pk).exists()


def test_a_second_sweep_finds_nothing_left_to_fire(slow_step):
    instance = held_slow_step()
    make_due(instance)

    with runner(HOLDING):
        services.sweep()
        revision = row_of(instance).revision
        report = services.sweep()

    assert (report.fired, report.interrupted) == (0, 0)
    assert row_of(instance).revision == revision


def _fails_first(ctx):
    if ctx.attempt == 1:
        raise RuntimeError("first attempt fails")
    return {"attempt": ctx.attempt}


@pytest.fixture
def retried():
    """An operation that fails its first attempt and retries after 60s."""
    definition = Workflow(id="retried", steps=[Step("work", operations=[
        Operation("flaky", run=_fails_first, retries=1, retry_delay=60)])])
    registry.register(definition, origin="tests.services.test_background")
    yield definition
    registry.unregister(definition.id)


@pytest.fixture
def bounded():
    """An operation whose attempts may take 5s."""
    definition = Workflow(id="bounded", steps=[Step("work", operations=[
        Operation("op", run=lambda ctx: "ok", timeout=5)])])
    registry.register(definition, origin="tests.services.test_background")
    yield definition
    registry.unregister(definition.id)


def test_a_failed_attempt_waits_for_its_retry_deadline(retried):
    with runner(IMMEDIATE):
        instance = services.create("retried", start=True)

    assert operation(row_of(instance), "flaky")["status"] == "waiting"
    assert Deadline.objects.get(instance=instance.pk).kind == "retry"


def test_sweep_fires_a_due_retry_and_the_next_attempt_runs(retried):
    with runner(IMMEDIATE):
        instance = services.create("retried", start=True)
        make_due(instance)
        report = services.sweep()

    assert report.fired == 1
    flaky = operation(row_of(instance), "flaky")
    assert (flaky["status"], flaky["attempt"], flaky["result"]) == ("succeeded", 2,
                                                                    {"attempt": 2})


def test_a_claim_sets_the_attempts_own_timeout_on_its_row(bounded):
    with runner(HOLDING):
        instance = services.create("bounded", start=True)
    (token,) = HoldingRunner.held
    claimed = services.claim_attempt(token)

    attempt = Attempt.objects.get(token=token)
    assert attempt.timeout_at == attempt.claimed_at + timedelta(seconds=5)
    assert attempt.claimed_at.timestamp() == pytest.approx(claimed.at)
    assert not Deadline.objects.filter(instance=instance.pk).exists()  # only the row has it


def test_sweep_fires_a_due_attempt_timeout(bounded):
    with runner(HOLDING):
        instance = services.create("bounded", start=True)
        (token,) = HoldingRunner.held
        services.claim_attempt(token)
        Attempt.objects.filter(token=token).update(
            timeout_at=timezone.now() - timedelta(seconds=1))
        report = services.sweep()

    assert report.fired == 1
    row = row_of(instance)
    assert (row.status, row.errors) == ("failed", ["Operation timed out after 5s"])
    assert Attempt.objects.get(token=token).timeout_at is None  # fired once, not again


def test_an_attempt_that_finishes_in_time_leaves_no_timeout(bounded):
    with runner(HOLDING):
        instance = services.create("bounded", start=True)
        (token,) = HoldingRunner.held
        claimed = services.claim_attempt(token)
        assert services.finish_attempt(token, AttemptOutcome(ok=True, value=1),
                                       claimed_at=claimed.at)

    assert Attempt.objects.get(token=token).timeout_at is None
    assert services.sweep(timezone.now() + timedelta(seconds=60)).fired == 0
    assert operation(row_of(instance), "op")["status"] == "succeeded"


# -- the sweep: heartbeats ------------------------------------------------------------------


def claimed_back_office() -> tuple[WorkflowInstance, str]:
    """A back-office instance whose charge attempt a worker claimed (and then went quiet)."""
    with runner(HOLDING):
        instance = services.create("back-office", start=True)
    (token,) = HoldingRunner.held
    assert services.claim_attempt(token, worker="lost-worker") is not None
    return instance, token


def silence(token: str) -> None:
    Attempt.objects.filter(token=token).update(
        heartbeat_at=timezone.now() - timedelta(seconds=HEARTBEAT_TIMEOUT + 1))


def test_a_claimed_attempt_is_running_with_a_heartbeat():
    instance, token = claimed_back_office()

    attempt = Attempt.objects.get(token=token)
    assert (attempt.status, attempt.worker) == ("running", "lost-worker")
    assert attempt.heartbeat_at is not None
    # The claim is on the attempt's row; the instance records it with its next change,
    # and meanwhile shows it live, as the API and the admin do.
    assert operation(row_of(instance), "charge")["status"] == "queued"
    (live,) = live_operations(row_of(instance))
    assert (live.operation.status, live.operation.started_at) == (
        "running", attempt.claimed_at.timestamp())


def test_sweep_interrupts_an_attempt_whose_heartbeat_expired():
    instance, token = claimed_back_office()
    silence(token)

    with runner(HOLDING):
        report = services.sweep()

    assert report.interrupted == 1
    assert Attempt.objects.get(token=token).status == "interrupted"
    row = row_of(instance)
    assert row.status == "failed"
    assert row.errors == ["Workflow work was interrupted and must be retried"]
    charge = operation(row, "charge")
    assert charge["status"] == "failed"
    assert charge["error"]["name"] == "OperationInterruptedError"
    assert charge["error"]["message"] == "Operation was interrupted before workflow recovery"


@pytest.mark.real_locks
def test_sweep_passes_over_a_silent_attempt_whose_instance_is_busy_and_goes_on():
    busy, busy_token = claimed_back_office()
    HoldingRunner.held.clear()
    other, other_token = claimed_back_office()
    silence(busy_token)
    silence(other_token)
    holding, release = threading.Event(), threading.Event()

    def hold_the_instance() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk=busy.pk)
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_instance, daemon=True)
    holder.start()
    assert holding.wait(30)
    try:
        with runner(HOLDING):
            report = services.sweep()
    finally:
        release.set()
        holder.join(30)
    assert not holder.is_alive()

    assert report.interrupted == 1
    assert Attempt.objects.get(token=busy_token).status == "running"
    assert Attempt.objects.get(token=other_token).status == "interrupted"
    assert row_of(other).status == "failed"
    with runner(HOLDING):
        assert services.sweep().interrupted == 1  # the next sweep gets it
    assert row_of(busy).status == "failed"


def test_sweep_leaves_an_attempt_with_a_recent_heartbeat():
    instance, token = claimed_back_office()

    with runner(HOLDING):
        report = services.sweep()

    assert report.interrupted == 0
    assert Attempt.objects.get(token=token).status == "running"
    assert row_of(instance).status == "running"


def test_the_late_result_of_an_interrupted_attempt_is_dropped():
    instance, token = claimed_back_office()
    silence(token)
    with runner(HOLDING):
        services.sweep()
    revision = row_of(instance).revision

    accepted = services.finish_attempt(token, AttemptOutcome(ok=True, value={"late": True}))

    assert accepted is False
    row = row_of(instance)
    assert (row.status, row.revision) == ("failed", revision)
    assert operation(row, "charge")["result"] is None


def test_retry_after_an_interruption_runs_to_done():
    instance, token = claimed_back_office()
    silence(token)
    with runner(HOLDING):
        services.sweep()

    with runner(IMMEDIATE):
        services.retry(instance)

    row = row_of(instance)
    assert (row.status, row.current_step, row.errors) == ("running", "done", [])
    assert operation(row, "charge")["result"] == {"charge": "ch_1"}


# -- the sweep: attempts nobody claimed -----------------------------------------------------


def test_sweep_hands_out_again_an_attempt_nobody_claimed():
    with runner(HOLDING):
        instance = services.create("back-office", start=True)
    Attempt.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))

    with runner(IMMEDIATE):
        report = services.sweep()

    assert report.redispatched == 1
    assert row_of(instance).current_step == "done"


# -- attempt rows under races ---------------------------------------------------------------


def test_a_late_interruption_leaves_a_finished_attempt_finished():
    instance, token = claimed_back_office()
    services.finish_attempt(token, AttemptOutcome(ok=True, value={"charge": "ch_1"}))
    revision = row_of(instance).revision

    # The sweep saw the attempt silent just before its result came in.
    with runner(HOLDING):
        moved = services.interrupt_attempt(token)

    assert moved is False
    assert Attempt.objects.get(token=token).status == "finished"
    assert row_of(instance).revision == revision


def test_an_interruption_of_an_instance_deleted_meanwhile_does_nothing(monkeypatch):
    """The sweep saw the attempt silent; the instance was purged before its lock was taken."""
    from django_workflows.services.sql import statements

    instance, token = claimed_back_office()
    family = type(statements())
    real_lock_tree = family.lock_tree

    def lock_tree(self, instance_id, timeout):
        WorkflowInstance.objects.filter(pk=instance.pk).delete()
        return real_lock_tree(self, instance_id, timeout)

    monkeypatch.setattr(family, "lock_tree", lock_tree)

    assert services.interrupt_attempt(token) is False
    assert not Attempt.objects.filter(token=token).exists()


def test_a_duplicate_claim_leaves_the_winners_attempt_running(monkeypatch):
    """Two workers get one token (a redispatch, a broker retry) and both see it queued:
    both send the claim's fenced UPDATE at once, and only one finds it still queued."""
    from django_workflows.services.sql import statements

    AttemptStatements = type(statements().attempts)  # this database's claim
    with runner(HOLDING):
        services.create("back-office", start=True)
    (token,) = HoldingRunner.held
    both_ready = threading.Barrier(2, timeout=30)
    real_claim = AttemptStatements.claim

    def claim_together(self, *args, **kwargs):
        both_ready.wait()  # each saw the attempt queued; now both claim it
        return real_claim(self, *args, **kwargs)

    monkeypatch.setattr(AttemptStatements, "claim", claim_together)
    claimed: list = []

    def claim(worker: str) -> None:
        try:
            claimed.append((worker, services.claim_attempt(token, worker=worker)))
        finally:
            connection.close()

    claimers = [threading.Thread(target=claim, args=(name,), daemon=True) for name in "AB"]
    for thread in claimers:
        thread.start()
    for thread in claimers:
        thread.join(30)
        assert not thread.is_alive()

    winners = [worker for worker, work in claimed if work is not None]
    assert len(claimed) == 2 and len(winners) == 1
    attempt = Attempt.objects.get(token=token)
    assert (attempt.status, attempt.worker) == ("running", winners[0])


# -- a runner that fails --------------------------------------------------------------------


class BrokenRunner:
    """A runner whose broker is down."""

    def enqueue(self, tokens: Sequence[str]) -> None:
        raise ConnectionError("the broker is down")


BROKEN = "tests.services.test_background.BrokenRunner"


def test_a_runner_that_fails_does_not_fail_the_committed_command():
    with runner(BROKEN):
        instance = services.create("back-office", start=True)

    assert (instance.status, instance.current_step) == ("running", "pay")
    assert row_of(instance).status == "running"


def test_work_a_failed_runner_did_not_take_is_handed_out_by_the_sweep():
    with runner(BROKEN):
        instance = services.create("back-office", start=True)
    assert list(Attempt.objects.values_list("status", flat=True)) == ["queued"]
    Attempt.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))

    with runner(IMMEDIATE):
        services.sweep()

    assert row_of(instance).current_step == "done"


def test_a_runner_that_fails_is_logged(caplog):
    with runner(BROKEN), caplog.at_level(logging.ERROR, logger="django_workflows"):
        services.create("back-office", start=True)

    (token,) = Attempt.objects.values_list("token", flat=True)
    assert [record.getMessage() for record in caplog.records] == [
        f"The runner did not take attempts {token}; the sweep will hand them out again"]


def test_the_started_event_keeps_the_time_of_the_claim(bounded):
    """The claim writes only the attempt's row; the event written later says when it was."""
    from django_workflows import clock
    from django_workflows.models import WorkflowEvent

    with runner(HOLDING):
        instance = services.create("bounded", start=True)
        (token,) = HoldingRunner.held
        claimed = services.claim_attempt(token)
        clock.use(lambda: claimed.at + 3)  # the work took three seconds
        try:
            assert services.finish_attempt(token, AttemptOutcome(ok=True, value=1),
                                           claimed_at=claimed.at)
        finally:
            clock.use(None)

    times = dict(WorkflowEvent.objects.filter(instance=instance.pk).values_list(
        "type", "created_at"))
    gap = (times["operation-succeeded"] - times["operation-started"]).total_seconds()
    assert gap == pytest.approx(3, abs=0.05)
