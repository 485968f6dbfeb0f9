"""The example's expense approval: a state schema, and no cancel once approved."""

from __future__ import annotations

import pytest
from django.core import mail

from django_workflows.exceptions import InvalidState, WorkflowNotMoved
from example_project.shop.models import Reimbursement
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CLAIM = {"employee": "ann", "amount": 42.5, "currency": "EUR", "category": "travel",
         "description": "Train to the customer", "receipt": "receipts/4711.pdf",
         "decision": None, "comment": ""}


@pytest.fixture
def manager(db):
    # A back-office user: may act on every instance (the model's change permission).
    return UserFactory(username="mo", permissions=["change_workflowinstance"])


def claimed(wf, **changes):
    """A claim by ann, submitted: waiting for the manager's decision."""
    claim = wf.create("expense-approval", state={**CLAIM, **changes}, start=True)
    return wf.next(claim)


def decide(wf, claim, manager, decision, comment=""):
    claim = wf.reload(claim)
    wf.update_state(claim, {**claim.state, "decision": decision, "comment": comment},
                    user=manager)
    return wf.next(claim, user=manager)


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


def test_an_employee_cannot_decide_their_own_claim(wf, customer):
    claim = claimed(wf)

    with pytest.raises(WorkflowNotMoved):
        decide(wf, claim, customer, "approved")

    assert wf.reload(claim).errors == ["You cannot decide on your own expense claim"]


def test_a_rejection_needs_a_reason(wf, manager):
    claim = claimed(wf)

    with pytest.raises(WorkflowNotMoved):
        decide(wf, claim, manager, "rejected")

    assert wf.reload(claim).errors == ["comment: Say why the claim is rejected"]


def test_a_claim_can_be_cancelled_before_it_is_approved(wf):
    claim = claimed(wf)

    cancelled = wf.cancel(claim)

    assert cancelled.status == "cancelled"


def test_an_approved_claim_cannot_be_cancelled(wf, manager):
    claim = claimed(wf)
    wf.update_state(claim, {**claim.state, "decision": "approved"}, user=manager)

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.cancel(claim)

    assert refused.value.code == "cancel_refused"
    assert wf.reload(claim).status == "running"


def test_a_paid_claim_cannot_be_cancelled(wf, manager):
    claim = claimed(wf)
    decide(wf, claim, manager, "approved")

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.cancel(claim)

    assert refused.value.code == "completed"
