"""The onboarding's permission hooks, as the REST API applies them."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import WorkflowInstance

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

    assert answer.status_code == 403
    assert WorkflowInstance.objects.get(pk=onboarding.pk).current_step == "identity"


def test_a_customer_may_not_decide_their_own_review(client_of, customer):
    _onboarding, child = at_review(customer)

    answer = client_of(customer).patch(f"/api/instances/{child.pk}/state/",
                                       {"state": {**child.state, "decision": "approved"}},
                                       format="json")

    assert answer.status_code == 403
    assert WorkflowInstance.objects.get(pk=child.pk).state["decision"] is None


def test_an_operator_decides_the_review(client_of, customer, operator):
    onboarding, child = at_review(customer)
    operator.is_superuser = True  # acts on every instance (or: the change permission)
    operator.save()
    client = client_of(operator)

    client.patch(f"/api/instances/{child.pk}/state/",
                 {"state": {**child.state, "decision": "approved"}}, format="json")
    answer = client.post(f"/api/instances/{child.pk}/next/")

    assert (answer.status_code, answer.json()["status"]) == (200, "completed")
    assert WorkflowInstance.objects.get(pk=onboarding.pk).current_step == "confirm"
