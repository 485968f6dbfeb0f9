"""The example's expense approval: a state schema, a manager's task, no cancel once approved."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core import mail

from django_workflows import services
from django_workflows.exceptions import InvalidState, NotAllowed, WorkflowNotMoved
from django_workflows.models import WorkflowTask
from example_project.shop.models import Reimbursement
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CLAIM = {"employee": "ann", "amount": 42.5, "currency": "EUR", "category": "travel",
         "description": "Train to the customer", "receipt": "receipts/4711.pdf"}


def manager_named(name: str):
    user = UserFactory(username=name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    return user


@pytest.fixture
def manager(db):
    return manager_named("mo")


def claimed(wf, **changes):
    """A claim by ann, submitted: waiting for the manager's decision."""
    claim = wf.create("expense-approval", state={**CLAIM, **changes}, start=True)
    return wf.next(claim)


def decide(wf, claim, manager, decision, comment=""):
    return wf.complete(claim, input={"decision": decision, "comment": comment}, user=manager)


def test_an_approved_claim_is_paid_back(wf, manager):
    claim = claimed(wf)

    done = wf.reload(decide(wf, claim, manager, "approved"))

    assert done.status == "completed"
    assert done.history == ["claim", "approval", "payout"]
    payment = Reimbursement.objects.get(expense=str(claim.pk))
    assert (payment.employee, payment.amount_cents, payment.currency) == ("ann", 4250, "EUR")


def test_a_rejected_claim_tells_the_employee_why(wf, manager):
    claim = claimed(wf)

    done = wf.reload(decide(wf, claim, manager, "rejected",
                            comment="Book trains through travel desk"))

    assert done.history == ["claim", "approval", "rejection"]
    assert not Reimbursement.objects.exists()
    assert [(m.to, m.body) for m in mail.outbox] == [
        (["ann@example.com"], "Book trains through travel desk")]


def test_a_claim_above_the_limit_needs_a_receipt(wf):
    claim = wf.create("expense-approval", state={**CLAIM, "receipt": None}, start=True)

    with pytest.raises(WorkflowNotMoved):
        wf.next(claim)

    assert wf.reload(claim).errors == ["receipt: A receipt is needed above 25"]


def test_a_small_claim_needs_no_receipt(wf):
    claim = claimed(wf, amount=12, receipt=None)

    assert claim.current_step == "approval"


def test_a_state_that_breaks_the_schema_is_refused_naming_the_field(wf):
    claim = wf.create("expense-approval", state=CLAIM)

    with pytest.raises(InvalidState) as refused:
        wf.update_state(claim, {**CLAIM, "amount": "42.50"})

    assert [(e.field, e.message) for e in refused.value.field_errors] == [
        ("amount", "'42.50' is not of type 'number'")]
    assert wf.reload(claim).state["amount"] == 42.5


def test_a_field_the_schema_does_not_know_is_refused(wf):
    with pytest.raises(InvalidState) as refused:
        wf.create("expense-approval", state={**CLAIM, "iban": "DE00"})

    assert "iban" in refused.value.field_errors[0].message


def test_a_manager_cannot_decide_their_own_claim(wf, customer):
    customer.groups.add(Group.objects.get_or_create(name="managers")[0])
    claim = claimed(wf)  # ann's own: she is a manager too

    with pytest.raises(NotAllowed, match="your own instance"):
        decide(wf, claim, type(customer).objects.get(pk=customer.pk), "approved")

    assert wf.reload(claim).current_step == "approval"


def test_the_decision_records_who_made_it(wf, manager):
    claim = claimed(wf)

    decide(wf, claim, manager, "approved")

    task = WorkflowTask.objects.get(instance=claim)
    assert (task.completed_by, task.input) == (manager, {"decision": "approved", "comment": ""})


def test_a_rejection_needs_a_reason_and_changes_nothing_without_one(wf, manager):
    claim = claimed(wf)

    with pytest.raises(WorkflowNotMoved) as refused:
        decide(wf, claim, manager, "rejected")

    assert (refused.value.code, refused.value.reason) == (
        "validation_failed", "comment: Say why the claim is rejected")
    assert WorkflowTask.objects.get(instance=claim).status == "open"


def test_the_claimant_may_not_change_a_submitted_claim(wf):
    claim = claimed(wf)

    with pytest.raises(NotAllowed):
        wf.update_state(claim, {**CLAIM, "amount": 4200})


def test_a_claim_left_undecided_for_two_days_goes_to_the_directors_too(wf):
    claim = claimed(wf)

    wf.advance(2 * 24 * 3600 + 1)

    task = WorkflowTask.objects.get(instance=claim)
    assert task.overdue and "group:directors" in task.candidates


def test_a_claim_can_be_cancelled_before_it_is_approved(wf):
    claim = claimed(wf)

    cancelled = wf.cancel(claim)

    assert cancelled.status == "cancelled"


def test_an_approved_claim_cannot_be_cancelled_and_the_refusal_says_why(wf, manager):
    claim = claimed(wf)
    # Decided outside the tester: the payout is handed out on commit, which a test's
    # transaction never reaches, so the claim stays approved with its payout queued.
    services.complete(claim, input={"decision": "approved", "comment": ""}, user=manager)
    assert wf.reload(claim).operations[0]["status"] == "queued"

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.cancel(claim)

    assert refused.value.code == "cancel_refused"
    assert refused.value.reason == ("This claim was approved and is being paid back: roll it "
                                    "back instead")
    assert wf.reload(claim).status == "running"


def test_a_paid_claim_cannot_be_cancelled(wf, manager):
    claim = claimed(wf)
    decide(wf, claim, manager, "approved")

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.cancel(claim)

    assert refused.value.code == "completed"
