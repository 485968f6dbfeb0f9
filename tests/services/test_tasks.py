"""Tasks through the service: rows for the inbox, candidates judged under the lock.

The ``approval`` workflow: ``claim`` -> ``decision`` (a task for the group
``managers``, not the claim's owner, due in an hour, then ``directors`` too)
-> ``paid`` or ``rejected``.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from django_workflows import services
from django_workflows.exceptions import (
    InvalidState,
    NotAllowed,
    StaleRevision,
    WorkflowNotMoved,
)
from django_workflows.models import TaskCandidate, WorkflowInstance, WorkflowTask
from django_workflows.services.access import visible_instances
from django_workflows.testing import WorkflowTester
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def member(name: str, group: str):
    user = UserFactory(username=name)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def people(db):
    return {"ann": UserFactory(username="ann"), "mo": member("mo", "managers"),
            "max": member("max", "managers"), "dee": member("dee", "directors"),
            "sam": UserFactory(username="sam")}


def waiting(owner) -> WorkflowInstance:
    """Ann's claim, waiting for a manager's decision."""
    claim = services.create("approval", owner=owner, start=True)
    return services.next(claim, user=owner)


def task_of(instance) -> WorkflowTask:
    return WorkflowTask.objects.get(instance=instance, status="open")


def decide(instance, user, decision="approved", **options):
    return services.complete(instance, input={"decision": decision}, user=user, **options)


def test_entering_the_step_opens_a_task_row_with_its_candidates(people):
    claim = waiting(people["ann"])

    task = task_of(claim)
    assert (task.step, task.title, task.candidates, task.excluded_user) == (
        "decision", "Manager's decision", ["group:managers"], people["ann"])
    assert list(TaskCandidate.objects.filter(task=task).values_list("key", flat=True)) == [
        "group:managers"]
    assert task.due_at is not None and not task.overdue


def test_a_candidate_completes_the_task_and_the_instance_moves_on(people):
    claim = waiting(people["ann"])
    task = task_of(claim)

    moved = decide(claim, people["mo"])

    assert (moved.current_step, moved.state["decision"]) == ("paid", {"decision": "approved"})
    task.refresh_from_db()
    assert (task.status, task.completed_by, task.input) == (
        "done", people["mo"], {"decision": "approved"})
    assert task.completed_at is not None
    assert not TaskCandidate.objects.filter(task=task).exists()


def test_the_owner_may_not_decide_their_own_claim(people):
    ann = member("ann2", "managers")  # a manager's own claim
    claim = waiting(ann)

    with pytest.raises(NotAllowed, match="your own instance"):
        decide(claim, ann)
    assert WorkflowInstance.objects.get(pk=claim.pk).current_step == "decision"


def test_someone_who_is_no_candidate_may_not_claim_or_complete(people):
    claim = waiting(people["ann"])
    sam = UserFactory(username="sam2", permissions=["change_workflowinstance"])

    for command in (lambda: services.claim(claim, user=sam), lambda: decide(claim, sam)):
        with pytest.raises(NotAllowed, match="not a candidate"):
            command()


def test_writing_the_decision_into_the_state_is_refused_naming_the_tasks_key(people):
    claim = waiting(people["ann"])

    with pytest.raises(InvalidState) as refused:
        services.update_state(claim, {"amount": 10, "decision": {"decision": "approved"}},
                              user=people["ann"])

    assert [(e.field, e.message) for e in refused.value.field_errors] == [(
        "decision", '"decision" is written by the task of step "decision"; it cannot be set '
                    "here")]
    assert WorkflowInstance.objects.get(pk=claim.pk).state == {"amount": 10}


def test_trusted_code_may_not_write_the_decision_either(people):
    claim = waiting(people["ann"])

    with pytest.raises(InvalidState):
        services.update_state(claim, lambda state: {**state, "decision": {"decision": "ok"}})


def test_a_claim_created_with_its_decision_is_refused_and_nothing_is_stored(people):
    with pytest.raises(InvalidState) as refused:
        services.create("approval", state={"amount": 10, "decision": {"decision": "approved"}},
                        owner=people["ann"], user=people["ann"])

    assert [e.field for e in refused.value.field_errors] == ["decision"]
    assert not WorkflowInstance.objects.exists()


def test_a_decided_claims_state_saved_whole_keeps_its_decision_and_changes_the_rest(people):
    claim = decide(waiting(people["ann"]), people["mo"])

    saved = services.update_state(claim, {**claim.state, "amount": 12}, user=people["ann"])

    assert saved.state == {"amount": 12, "decision": {"decision": "approved"}}


def test_a_decision_cannot_be_taken_out_of_the_state(people):
    claim = decide(waiting(people["ann"]), people["mo"])

    with pytest.raises(InvalidState):
        services.update_state(claim, {"amount": 10}, user=people["ann"])


def test_a_candidate_sees_the_instance_and_acts_on_the_task_only(people):
    claim = waiting(people["ann"])

    assert claim.pk in visible_instances(people["mo"]).values_list("pk", flat=True)
    assert claim.pk not in visible_instances(people["sam"]).values_list("pk", flat=True)
    with pytest.raises(NotAllowed):
        services.cancel(claim, user=people["mo"])


def test_a_claimed_task_is_completed_by_its_claimer_only(people):
    claim = waiting(people["ann"])
    services.claim(claim, user=people["mo"])

    with pytest.raises(WorkflowNotMoved) as refused:
        decide(claim, people["max"])

    assert refused.value.code == "task_claimed"
    assert task_of(claim).claimed_by == people["mo"]


def test_the_claimer_or_a_supervisor_releases_it(people):
    claim = waiting(people["ann"])
    services.claim(claim, user=people["mo"])
    with pytest.raises(NotAllowed):
        services.release(claim, user=people["max"])
    supervisor = UserFactory(username="sup", permissions=["change_workflowinstance"])

    services.release(claim, user=supervisor)

    assert task_of(claim).claimed_by is None


def test_a_task_past_due_is_overdue_and_escalates(people):
    with WorkflowTester() as wf:
        claim = waiting(people["ann"])
        task = task_of(claim)
        assert not is_candidate_of(people["dee"], task)

        wf.advance(3601)

    task.refresh_from_db()
    assert task.overdue and task.candidates == ["group:managers", "group:directors"]
    assert is_candidate_of(people["dee"], task)
    decide(claim, people["dee"])


def is_candidate_of(user, task) -> bool:
    from django_workflows.services.access import acting_on_tasks

    return acting_on_tasks(user).filter(pk=task.pk).exists()


def test_going_back_cancels_the_task_row(people):
    claim = waiting(people["ann"])
    task = task_of(claim)

    services.back(claim, user=people["ann"])

    task.refresh_from_db()
    assert task.status == "cancelled"
    assert not TaskCandidate.objects.filter(task=task).exists()


def test_complete_with_a_stale_revision_changes_nothing(people):
    claim = waiting(people["ann"])

    with pytest.raises(StaleRevision):
        decide(claim, people["mo"], expected_revision=claim.revision - 1)

    assert task_of(claim).status == "open"


def test_complete_with_an_idempotency_key_answers_the_first_result_again(people):
    claim = waiting(people["ann"])
    decide(claim, people["mo"], idempotency_key="decide-1")

    again = decide(claim, people["mo"], idempotency_key="decide-1")

    assert again.replayed is True and again.current_step == "paid"


@pytest.mark.real_locks
@pytest.mark.django_db(transaction=True)
def test_two_candidates_completing_at_once_one_wins_the_other_is_refused(people):
    claim = waiting(people["ann"])
    ready = threading.Barrier(2)
    results: dict[str, object] = {}

    def complete_as(name: str, decision: str) -> None:
        try:
            ready.wait(10)
            results[name] = decide(claim, people[name], decision)
        except WorkflowNotMoved as refusal:
            results[name] = refusal
        finally:
            connection.close()

    threads = [threading.Thread(target=complete_as, args=("mo", "approved"), daemon=True),
               threading.Thread(target=complete_as, args=("max", "rejected"), daemon=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()

    refused = [r for r in results.values() if isinstance(r, WorkflowNotMoved)]
    assert len(refused) == 1 and refused[0].code in ("no_task", "task_closed")
    task = WorkflowTask.objects.get(instance=claim)
    winner = task.completed_by.username
    assert not isinstance(results[winner], WorkflowNotMoved)
    final = WorkflowInstance.objects.get(pk=claim.pk)
    assert final.current_step == {"mo": "paid", "max": "rejected"}[winner]
