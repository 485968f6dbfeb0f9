"""The example's workflows against a customer who tries what they should not, over the API."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import WorkflowInstance, WorkflowTask
from example_project.shop.models import Charge, Reimbursement
from tests.example.factories import ORDER_TOTAL_CENTS, order_state, stock_for_order
from tests.example.test_expenses import manager_named
from tests.services.test_background import HOLDING, runner

pytestmark = [pytest.mark.django_db, pytest.mark.needs_api,
              pytest.mark.urls("tests.example.urls")]


@pytest.fixture
def client_of():
    from rest_framework.test import APIClient  # here: without the [api] extra the module loads

    def client_for(user):
        client = APIClient()
        client.force_authenticate(user)
        return client
    return client_for


def at_review(customer):
    """An onboarding whose identity check waits for an operator's review."""
    onboarding = services.create("onboarding", user=customer, start=True)
    services.update_state(onboarding, lambda s: {**s, "name": "Ann", "email": "ann@example.com",
                                                 "plan": "pro"}, user=customer)
    services.next(onboarding, user=customer)
    services.next(onboarding, user=customer)
    child = WorkflowInstance.objects.get(parent=onboarding)
    services.update_state(child, lambda s: {**s, "document_number": "X1234567"}, user=customer)
    services.next(onboarding, user=customer)
    return onboarding, WorkflowInstance.objects.get(pk=child.pk)


def test_a_customer_may_skip_the_plan(client_of, customer):
    onboarding = services.create("onboarding", user=customer, start=True)
    services.update_state(onboarding, lambda s: {**s, "name": "Ann",
                                                 "email": "ann@example.com"}, user=customer)
    services.next(onboarding, user=customer)

    answer = client_of(customer).post(f"/api/instances/{onboarding.pk}/skip/")

    assert (answer.status_code, answer.json()["current_step"]) == (200, "identity")


def test_a_customer_may_not_skip_the_identity_check(client_of, customer):
    onboarding, _child = at_review(customer)

    answer = client_of(customer).post(f"/api/instances/{onboarding.pk}/skip/")

    assert (answer.status_code, answer.json()["code"]) == (409, "not_skippable")
    assert WorkflowInstance.objects.get(pk=onboarding.pk).current_step == "identity"


def test_a_customer_may_not_create_an_identity_check_on_its_own(client_of, customer):
    answer = client_of(customer).post("/api/instances/", {"workflow": "identity-check",
                                                          "start": True}, format="json")

    assert answer.status_code == 400
    assert "only runs as the nested child" in answer.json()["fields"]["workflow"][0]
    assert not WorkflowInstance.objects.filter(workflow="identity-check").exists()


# -- orders ---------------------------------------------------------------------------


def order_as(client, **changes):
    return client.post("/api/instances/", {"workflow": "order-fulfilment", "start": True,
                                           "state": order_state(**changes)}, format="json")


def test_a_customer_may_not_skip_the_payment_of_an_order(client_of, customer):
    stock_for_order()
    with runner(HOLDING):  # the charge waits for a worker
        created = order_as(client_of(customer))
    assert (created.status_code, created.json()["current_step"]) == (201, "payment")

    answer = client_of(customer).post(f"/api/instances/{created.json()['id']}/skip/")

    assert answer.status_code in (403, 409), answer.json()
    assert WorkflowInstance.objects.get(pk=created.json()["id"]).current_step == "payment"


def test_staff_may_not_skip_the_payment_either(client_of, operator):
    stock_for_order()
    with runner(HOLDING):
        created = order_as(client_of(operator))

    answer = client_of(operator).post(f"/api/instances/{created.json()['id']}/skip/")

    assert (answer.status_code, answer.json()["code"]) == (409, "not_skippable")


def test_an_order_sent_with_its_own_prices_is_refused(client_of, customer):
    state = order_state()
    state["items"][0]["price_cents"] = 1

    answer = client_of(customer).post("/api/instances/", {
        "workflow": "order-fulfilment", "start": True, "state": state}, format="json")

    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid_state"
    assert not WorkflowInstance.objects.filter(workflow="order-fulfilment").exists()


def test_an_order_is_charged_at_the_catalogue_prices(client_of, customer, settings,
                                                     django_capture_on_commit_callbacks):
    settings.SHOP_PAYMENTS = {"FAILURE_RATE": 0, "LOST_RESPONSE_RATE": 0, "LATENCY": 0}
    stock_for_order()

    with django_capture_on_commit_callbacks(execute=True):  # the charge runs here
        created = order_as(client_of(customer))

    [charge] = Charge.objects.filter(reference=created.json()["id"])
    assert charge.amount_cents == ORDER_TOTAL_CENTS


def review_task_of(child) -> str:
    return str(WorkflowTask.objects.get(instance=child, status="open").pk)


def test_a_customer_may_not_decide_their_own_review(client_of, customer):
    _onboarding, child = at_review(customer)

    answer = client_of(customer).post(f"/api/tasks/{review_task_of(child)}/complete/",
                                      {"input": {"decision": "approved"}}, format="json")
    written = client_of(customer).patch(
        f"/api/instances/{child.pk}/state/",
        {"state": {**child.state, "review": {"decision": "approved"}}}, format="json")
    moved = client_of(customer).post(f"/api/instances/{child.pk}/next/")

    assert answer.status_code in (403, 404)
    assert written.status_code == 403
    assert (moved.status_code, moved.json()["code"]) == (409, "task_open")
    assert WorkflowInstance.objects.get(pk=child.pk).current_step == "review"


def test_an_operator_decides_the_review_through_its_task(client_of, customer, operator):
    onboarding, child = at_review(customer)
    client = client_of(operator)
    assert [t["id"] for t in client.get("/api/tasks/").json()["results"]] == [
        review_task_of(child)]

    answer = client.post(f"/api/tasks/{review_task_of(child)}/complete/",
                         {"input": {"decision": "approved"}}, format="json")

    assert (answer.status_code, answer.json()["instance"]["status"]) == (200, "completed")
    assert WorkflowInstance.objects.get(pk=onboarding.pk).current_step == "confirm"


# -- expense claims ---------------------------------------------------------------------


CLAIM = {"employee": "ann", "amount": 42.5, "currency": "EUR", "category": "travel",
         "description": "Train", "receipt": "r.pdf"}


def test_a_claim_created_already_approved_is_not_paid_out(client_of, customer,
                                                          django_capture_on_commit_callbacks):
    """The claimant writes the decision into the state: the claim is refused, not made."""
    client = client_of(customer)
    with django_capture_on_commit_callbacks(execute=True):
        created = client.post("/api/instances/", {
            "workflow": "expense-approval", "start": True,
            "state": {**CLAIM, "approval": {"decision": "approved"}}}, format="json")

    assert (created.status_code, created.json()["code"]) == (400, "invalid_state")
    assert created.json()["fields"] == {"state.approval": [
        "\"approval\" is written by the task of step \"approval\"; it cannot be set here"]}
    assert not WorkflowInstance.objects.exists()
    assert not Reimbursement.objects.exists()


def test_the_operator_s_review_task_shows_the_document_and_names_alice_s_onboarding(
        client_of, customer, operator):
    onboarding, _child = at_review(customer)
    [task] = client_of(operator).get("/api/tasks/").json()["results"]
    assert [(line["label"], line["value"]) for line in task["shows"]] == [
        ("Document", "Passport"), ("Number", "X1234567")]
    assert task["root"]["id"] == str(onboarding.pk)


def test_the_manager_s_task_shows_the_claim_being_decided(client_of, customer):
    claim = services.create("expense-approval", state=CLAIM, user=customer, start=True)
    services.next(claim, user=customer)
    [task] = client_of(manager_named("mo")).get("/api/tasks/").json()["results"]
    shown = {line["label"]: line["value"] for line in task["shows"]}
    assert shown["Amount"] == 42.5 and shown["Currency"] == "EUR"
    assert (shown["Description"], shown["Receipt"]) == ("Train", "r.pdf")
