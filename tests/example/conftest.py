from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from django_workflows.testing import WorkflowTester
from tests.factories import UserFactory


@pytest.fixture
def customer(db):
    return UserFactory(username="ann")


@pytest.fixture
def operator(db):
    # Back-office staff: sees and acts on every instance (the model's permissions), and
    # reviews identity documents (the group the identity check's review task asks).
    user = UserFactory(username="olga", is_staff=True,
                       permissions=["view_workflowinstance", "change_workflowinstance"])
    user.groups.add(Group.objects.get_or_create(name="operators")[0])
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def wf(db, customer):
    """A WorkflowTester acting as the customer (pass ``user=`` to act as someone else)."""
    with WorkflowTester(user=customer) as tester:
        yield tester


@pytest.fixture(scope="module")
def browser():
    """One Chromium for a module's browser tests (tests/example/browser.py)."""
    from playwright.sync_api import sync_playwright

    from .browser import launch

    # Playwright's sync API runs an event loop in this thread while the browser is
    # open; the test's own ORM calls (and the database teardown) are still synchronous.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = launch(playwright)
            yield browser
            browser.close()
