from __future__ import annotations

import pytest

from django_workflows.testing import WorkflowTester
from tests.factories import UserFactory


@pytest.fixture
def customer(db):
    return UserFactory(username="ann")


@pytest.fixture
def operator(db):
    # Back-office staff: sees and acts on every instance (the model's permissions).
    return UserFactory(username="olga", is_staff=True,
                       permissions=["view_workflowinstance", "change_workflowinstance"])


@pytest.fixture
def wf(db, customer):
    """A WorkflowTester acting as the customer (pass ``user=`` to act as someone else)."""
    with WorkflowTester(user=customer) as tester:
        yield tester
