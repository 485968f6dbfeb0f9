"""Access is judged on the instance as it is under the row lock, never on an earlier read.

The workflow's permission rule lets its owner skip the plan but not the identity
check (as the example's onboarding once did). A ``next`` that moves it from the
plan to the identity check holds the row; a ``skip`` sent meanwhile waits for
the lock. When it gets the row, the instance is at the identity check: the skip
must be refused there.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.models import WorkflowInstance
from tests import dbutil
from tests.factories import UserFactory

from .conftest import url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]

SIGNUP = Workflow(
    "race-signup", steps=[Step("plan"), Step("identity"), Step("confirm")],
    transitions=[Transition("plan", "identity"), Transition("identity", "confirm")],
    permission=lambda user, instance, action: action != "skip" or instance.current_step == "plan")


@pytest.fixture(autouse=True)
def signup():
    registry.register(SIGNUP)
    yield
    registry.unregister(SIGNUP.id)


def test_a_skip_sent_while_a_next_moves_on_is_judged_where_the_next_left_it():
    alice = UserFactory(username="alice")
    onboarding = services.create("race-signup", owner=alice, start=True)
    assert WorkflowInstance.objects.get(pk=onboarding.pk).current_step == "plan"
    holding = threading.Event()
    answers: list = []

    def next_in_flight() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk=onboarding.pk)
                holding.set()
                # The skip waits for this row.
                assert dbutil.a_session_waits_for_a_lock(15), "timed out"
                services.next(onboarding, user=alice)
        finally:
            connection.close()

    def skip() -> None:
        try:
            client = APIClient()
            client.force_authenticate(alice)
            answers.append(client.post(url(onboarding, "skip")))
        finally:
            connection.close()

    threads = [threading.Thread(target=next_in_flight, daemon=True)]
    threads[0].start()
    assert holding.wait(15)
    threads.append(threading.Thread(target=skip, daemon=True))
    threads[1].start()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()

    [answer] = answers
    assert answer.status_code == 403, answer.json()
    assert answer.json()["code"] == "permission_denied"
    assert WorkflowInstance.objects.get(pk=onboarding.pk).current_step == "identity"
