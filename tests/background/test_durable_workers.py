"""Durable code on real workers (docs/durable-code.md): a django-q2 cluster (the ORM broker)
and two ``db_worker`` processes of the Tasks database backend (tests/qcluster.py,
tests/tasks_workers.py).

The test process drives each instance (``services.create``, ``signal``, ``complete``); the
workers run its code (tests/testapp/durable.py), whose side effects write ``Note`` rows:
"charged 2 by <pid>" once per charge that happened. A worker dies by a real kill -9 (it
kills itself after a step, once), and the workers count an attempt as interrupted after
3 s without a heartbeat. Each test runs the code as a plain function and as ``async def``.

The tests poll rows with deadlines: the instance, its journal (``JournalEntry``), its
attempts and the notes. The workers are shared by the tests of a runner; the last tests
restart them or kill one (django-q2 replaces a dead worker itself; the db_worker pair is
started again for the next test). django-q2 runs only on a database with real row locks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from django_workflows import services
from django_workflows.models import (
    Attempt,
    AttemptStatus,
    JournalEntry,
    SignalStatus,
    WorkflowInstance,
    WorkflowTask,
)
from tests.background.conftest import needs_tasks
from tests.factories import UserFactory
from tests.qcluster import wait_for
from tests.testapp.models import Note

pytestmark = [pytest.mark.django_db(transaction=True)]

# The sync and async twins of each workflow: "<flavour>-charges", "<flavour>-billing", ...
FLAVOURS = pytest.mark.parametrize("flavour", ["durable", "async"])
SLEEP = 5  # seconds the billing code sleeps across the restart: a stop takes about 1


@pytest.fixture(scope="module", params=[
    pytest.param("orm", marks=[pytest.mark.needs_q2, pytest.mark.real_locks]),
    pytest.param("tasks-db", marks=needs_tasks)])
def broker(request: pytest.FixtureRequest) -> str:
    """qcluster (django-q2, ORM broker) and db_worker (the Tasks database backend)."""
    return request.param


# -- helpers ----------------------------------------------------------------------------------


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def notes() -> list[str]:
    return list(Note.objects.order_by("pk").values_list("text", flat=True))


def journal(instance: WorkflowInstance) -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(instance=instance).order_by("position"))


def attempts(instance: WorkflowInstance) -> list[Attempt]:
    return list(Attempt.objects.filter(instance=instance).order_by("enqueued_at"))


def until(instance: WorkflowInstance, condition: Callable[[WorkflowInstance], Any],
          what: str, timeout: float = 20.0) -> WorkflowInstance:
    """Poll ``instance`` until ``condition`` holds; say where it stood if it never did."""
    try:
        wait_for(lambda: condition(reload(instance)), timeout=timeout, message=what)
    except AssertionError as error:
        row = reload(instance)
        raise AssertionError(
            f"{error}; the instance is {row.status} at {row.current_step!r}, errors "
            f"{row.errors}, operations {row.operations}, attempts "
            f"{[(a.number, a.status, a.worker) for a in attempts(row)]}, journal "
            f"{[str(entry) for entry in journal(row)]}, notes {notes()}") from None
    return reload(instance)


def at_done(row: WorkflowInstance) -> bool:
    return row.current_step == "done"


def awaiting(signal: str) -> Callable[[WorkflowInstance], bool]:
    return lambda row: row.awaiting == signal


def open_task(row: WorkflowInstance) -> WorkflowTask | None:
    return WorkflowTask.objects.filter(instance=row, status="open").first()


def pid_of(note: str) -> int:
    """The process that wrote "charged 1 by <pid>"."""
    return int(note.rsplit(" by ", 1)[1])


def user_in(group: str) -> Any:
    user = UserFactory()
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


# -- the shared workers -----------------------------------------------------------------------


@FLAVOURS
def test_a_signal_sent_before_the_code_waits_is_kept_and_taken_when_it_does(cluster, flavour):
    workflow = f"{flavour}-billing"
    instance = services.create(workflow, state={"lines": [1], "intent": "pi_8", "due_in": 2},
                               start=True)

    # The code charges and sleeps 2 s before it waits for the payment: this one is early.
    sent = services.signal(workflow, "paid", {"amount": 9}, correlation="pi_8",
                           user=user_in("payment-bots"))
    assert (sent.kept, sent.taken_by) == (True, [])

    row = until(instance, open_task, "the code to take the kept signal and ask for a review")
    sent.signal.refresh_from_db()
    assert (sent.signal.status, sent.signal.taken_by) == (SignalStatus.TAKEN, [str(row.pk)])
    assert [(e.kind, e.name, e.value) for e in journal(row)][1:] == [
        ("sleep", "sleep", {"value": None, "timed_out": False}),
        ("signal", "paid", {"value": {"amount": 9}, "timed_out": False})]

    services.complete(row, input={"approve": False}, user=user_in("managers"))
    row = until(instance, at_done, "the code to finish with the decision")
    assert row.snap.operation("bill").result == {"charged": ["ch_1"], "paid": 9,
                                                 "approved": False}
    assert [n.split(" by ")[0] for n in notes()] == ["charged 1"]


@FLAVOURS
def test_a_replay_that_asks_for_another_step_fails_with_both_named_until_the_code_is_mended(
        cluster, flavour):
    workflow = f"{flavour}-reorder"
    instance = services.create(workflow, start=True)
    until(instance, awaiting("go"), "the code to load, charge and wait")

    Note.objects.create(text="deployed")  # its new version charges before it loads
    services.signal(workflow, "go", instance=instance)

    row = until(instance, lambda row: row.status == "failed", "the replay to be refused")
    message = ('The replay asked for step "charge" at position 0, but the journal holds '
               'step "load" there: the code changed the order of its steps '
               "(docs/durable-code.md: changing durable code)")
    work = row.snap.operation("work")
    assert (work.status, work.attempt) == ("failed", 1)  # two retries left, none made
    assert work.error is not None
    assert (work.error.name, work.error.message) == ("ReplayMismatch", message)
    assert row.errors == [message]
    # The attempt that waited, then the replay, which ran and recorded nothing.
    assert [a.status for a in attempts(row)] == [AttemptStatus.FINISHED] * 2
    assert [(e.position, e.name) for e in journal(row)] == [(0, "load"), (1, "charge")]
    assert [n.split(" by ")[0] for n in notes()] == ["load", "charge", "deployed"]

    # The deploy is rolled back and an operator retries: the code goes on from its journal,
    # with the signal that woke it.
    Note.objects.filter(text="deployed").delete()
    services.retry(row)
    row = until(instance, at_done, "the retried code to go on with the signal that woke it")
    assert row.snap.operation("work").result == ["load", "charge"]
    assert [(e.kind, e.name) for e in journal(row)] == [
        ("step", "load"), ("step", "charge"), ("signal", "go")]
    assert [n.split(" by ")[0] for n in notes()] == ["load", "charge"]


@FLAVOURS
def test_the_same_change_behind_ctx_patched_keeps_the_old_run_on_its_old_path(cluster,
                                                                             flavour):
    workflow = f"{flavour}-reorder"
    old = services.create(workflow, state={"guarded": True}, start=True)
    until(old, awaiting("go"), "the run from before the change to wait")

    Note.objects.create(text="deployed")  # charges first, behind ctx.patched("charge-first")
    new = services.create(workflow, state={"guarded": True}, start=True)
    until(new, awaiting("go"), "the run from after the change to wait")
    for instance in (old, new):
        services.signal(workflow, "go", instance=instance)

    old, new = (until(row, at_done, "both runs to finish") for row in (old, new))
    assert old.snap.operation("work").result == ["load", "charge"]
    assert new.snap.operation("work").result == ["charge", "load"]
    assert [(e.kind, e.name) for e in journal(old)] == [
        ("step", "load"), ("step", "charge"), ("signal", "go")]
    assert [(e.kind, e.name) for e in journal(new)] == [
        ("patch", "charge-first"), ("step", "charge"), ("step", "load"), ("signal", "go")]
    assert [n.split(" by ")[0] for n in notes()] == ["load", "charge", "deployed", "charge",
                                                     "load"]


# -- tests that restart the workers or kill one ---------------------------------------------


@FLAVOURS
def test_code_sleeps_across_a_restart_of_the_workers_then_takes_a_signal_and_a_decision(
        enqueue_to, clusters, transactional_db, flavour):
    clusters.get(enqueue_to)
    workflow = f"{flavour}-billing"
    instance = services.create(
        workflow, state={"lines": [1, 2], "intent": "pi_7", "due_in": SLEEP}, start=True)
    until(instance, lambda row: row.snap.waiting is not None
          and row.snap.waiting.kind == "timer", "the code to charge and sleep")

    clusters.stop()  # SIGTERM: a deploy's restart
    stopped_at = timezone.now()
    (first,) = attempts(instance)  # the timer did not fire before the workers stopped
    assert first.status == AttemptStatus.FINISHED  # and no worker is held while it sleeps
    clusters.start(enqueue_to)

    row = until(instance, awaiting("paid"), "the new workers to wake the code after its sleep")
    assert row.correlation == "pi_7"
    sleep = journal(row)[2]
    assert (sleep.kind, sleep.position) == ("sleep", 2)
    assert sleep.finished_at > stopped_at
    assert sleep.started_at is not None
    assert (sleep.finished_at - sleep.started_at).total_seconds() >= SLEEP - 1

    sent = services.signal(workflow, "paid", {"amount": 7}, correlation="pi_7",
                           user=user_in("payment-bots"))
    assert [taker.pk for taker in sent.taken_by] == [row.pk]
    row = until(instance, open_task, "the code to ask for a review")
    task = open_task(row)
    assert task is not None and task.title == "Review the invoice"

    services.complete(row, input={"approve": True}, user=user_in("managers"))

    row = until(instance, at_done, "the code to finish with the decision")
    assert row.snap.operation("bill").result == {"charged": ["ch_1", "ch_2"], "paid": 7,
                                                 "approved": True}
    # Each charge once, by the worker from before the restart; the replays ran none.
    assert [n.split(" by ")[0] for n in notes()] == ["charged 1", "charged 2"]
    assert {pid_of(n) for n in notes()} == {int(first.worker.rsplit(":", 1)[1])}
    assert [e.kind for e in journal(row)] == ["step", "step", "sleep", "signal", "task"]
    # One attempt per wake (the timer, the signal, the decision), on the new workers.
    later = attempts(row)[1:]
    assert [a.status for a in attempts(row)] == [AttemptStatus.FINISHED] * 4
    assert all(a.claimed_at is not None and a.claimed_at > stopped_at for a in later)
    assert first.worker not in {a.worker for a in later}


@FLAVOURS
def test_a_worker_killed_between_two_steps_is_retried_and_runs_no_finished_step_again(
        cluster, flavour):
    instance = services.create(f"{flavour}-charges",
                               state={"lines": [1, 2, 3, 4], "crash_after": 2}, start=True)

    row = until(instance, at_done, "the interrupted code to be retried and finish",
                timeout=40)

    before, crashed, after = notes()[:2], notes()[2], notes()[3:]
    assert [n.split(" by ")[0] for n in [*before, *after]] == [
        "charged 1", "charged 2", "charged 3", "charged 4"]  # each once
    assert crashed == "crashed"
    dead, survivor = {pid_of(n) for n in before}, {pid_of(n) for n in after}
    assert len(dead) == len(survivor) == 1 and dead != survivor
    interrupted, finished = attempts(row)
    assert (interrupted.status, finished.status) == (AttemptStatus.INTERRUPTED,
                                                     AttemptStatus.FINISHED)
    assert interrupted.worker.endswith(f":{dead.pop()}")
    # Each step recorded once, by the attempt that ran it.
    assert [(e.position, e.name, e.token) for e in journal(row)] == [
        (0, "charge-1", interrupted.token), (1, "charge-2", interrupted.token),
        (2, "charge-3", finished.token), (3, "charge-4", finished.token)]
    charge = row.snap.operation("charge")
    assert (charge.status, charge.attempt, charge.result) == (
        "succeeded", 2, ["ch_1", "ch_2", "ch_3", "ch_4"])
