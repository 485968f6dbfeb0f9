"""Tests of the example's workflows with WorkflowTester: docs/testing.md shows this file."""

import pytest
from django.test import override_settings

from django_workflows.testing import WorkflowTester
from example_project.shop.models import Charge, StockItem

ORDER = {
    "order_number": "T-1",
    "customer": {"name": "Ann", "email": "ann@example.com"},
    "items": [{"sku": "MUG", "quantity": 1}],
    "payment_method": "pm_card_ok",
    "currency": "EUR",
    "address": {"country": "DE"},
}

# A fake payment provider that answers every charge with "503 unavailable".
PROVIDER_DOWN = override_settings(SHOP_PAYMENTS={"FAILURE_RATE": 1.0})


@pytest.fixture
def mugs(db):
    return StockItem.objects.create(sku="MUG", name="Mug", price_cents=1290, on_hand=5)


@pytest.mark.django_db
def test_an_approved_expense_claim_runs_to_completion():
    claim = {"employee": "ann", "amount": 12.0, "currency": "EUR", "category": "meals",
             "description": "Lunch", "receipt": None}
    with WorkflowTester() as wf:
        instance = wf.create("expense-approval", state=claim)

        # Start, then `next` until it completes; the manager's task gets this input.
        done = wf.run_to_completion(instance, tasks={"approval": {"decision": "approved"}})

    assert done.history == ["claim", "approval", "payout"]


def test_an_order_rides_out_a_short_outage(mugs):
    with WorkflowTester() as wf:
        with PROVIDER_DOWN:
            order = wf.create("order-fulfilment", state=ORDER, start=True)
        assert wf.reload(order).operations[0]["status"] == "waiting"  # for attempt 2

        wf.advance(2)  # the fake clock reaches the retry: attempt 2 runs, and succeeds

        assert wf.reload(order).status == "completed"
        wf.assert_events(order, ["operation-retrying", "operation-succeeded", "complete"],
                         contains=True)
    assert Charge.objects.count() == 1


def test_an_outage_longer_than_the_step_timeout_fails_the_order(mugs):
    with WorkflowTester() as wf, PROVIDER_DOWN:
        order = wf.create("order-fulfilment", state=ORDER, start=True)

        wf.advance(600)  # ten minutes of retries, in no time

        assert wf.reload(order).status == "failed"
        assert wf.reload(order).errors == ['Workflow step "payment" timed out after 600s']
