"""Expense claims are numbered E-<year>-0001, E-<year>-0002, … when they are made: the
admin lists the number, its search finds the claim by it, and the API answers with it.

The race (two claims made at the same moment get two numbers) needs real row locks: it
runs on PostgreSQL or MariaDB, with real threads.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from django_workflows import services
from django_workflows.models import WorkflowInstance
from example_project.shop.models import ClaimCounter

pytestmark = pytest.mark.django_db

CLAIM = {"employee": "ann", "amount": 42.5, "currency": "EUR", "category": "travel",
         "description": "Train to the customer", "receipt": "receipts/4711.pdf"}
JOIN_TIMEOUT = 30.0


def this_year() -> int:
    """Read when a test runs, not when the module is imported (a run may cross New Year)."""
    return timezone.localdate().year


def number(n: int, year: int | None = None) -> str:
    return f"E-{year or this_year()}-{n:04d}"


def claim(**options) -> WorkflowInstance:
    return services.create("expense-approval", state=CLAIM, start=True, **options)


def test_each_new_claim_gets_the_years_next_number(wf):
    first = wf.create("expense-approval", state=CLAIM, start=True)
    draft = wf.create("expense-approval", state=CLAIM)  # not started: numbered all the same

    assert (first.reference, draft.reference) == (number(1), number(2))
    assert WorkflowInstance.objects.get(pk=first.pk).reference == number(1)


def test_a_new_year_starts_again_at_one(db):
    last_year = this_year() - 1
    ClaimCounter.objects.create(year=last_year, last=41)

    assert claim().reference == number(1)
    assert ClaimCounter.objects.get(year=last_year).last == 41


def test_a_claim_given_a_reference_keeps_it_and_its_number_is_skipped_later(db):
    own = claim(reference=number(2))
    made = [claim().reference for _ in range(2)]

    assert own.reference == number(2)
    assert made == [number(1), number(3)]


def test_a_claim_whose_creation_is_undone_gives_its_number_back(db):
    with pytest.raises(RuntimeError), transaction.atomic():
        claim()
        raise RuntimeError("the request failed after the claim was made")

    assert claim().reference == number(1)


def test_other_workflows_get_no_number(wf, customer):
    onboarding = wf.create("onboarding", start=True)

    assert onboarding.reference is None
    assert not ClaimCounter.objects.exists()


def test_the_admin_lists_the_number_and_its_search_finds_the_claim(admin_client):
    claim()
    wanted = claim()
    claim()
    changelist = reverse("admin:django_workflows_workflowinstance_changelist")

    listed = admin_client.get(changelist).content.decode()
    found = admin_client.get(changelist, {"q": number(2)}).content.decode()

    assert all(number(n) in listed for n in (1, 2, 3))
    assert number(2) in found and number(1) not in found and number(3) not in found
    assert reverse("admin:django_workflows_workflowinstance_change",
                   args=[wanted.pk]) in found


@pytest.mark.needs_api
def test_the_api_answers_a_new_claim_with_its_number_and_finds_it_by_it(customer):
    from rest_framework.test import APIClient  # here: without the [api] extra the module loads

    client = APIClient()
    client.force_authenticate(customer)

    created = client.post("/api/instances/", {"workflow": "expense-approval", "start": True,
                                              "state": CLAIM}, format="json")

    assert (created.status_code, created.json()["reference"]) == (201, number(1))
    found = client.get("/api/instances/", {"reference": number(1)}).json()["results"]
    assert [row["id"] for row in found] == [created.json()["id"]]


@pytest.mark.real_locks
@pytest.mark.django_db(transaction=True)
def test_claims_made_at_the_same_moment_get_different_numbers():
    sides = 4
    barrier = threading.Barrier(sides, timeout=JOIN_TIMEOUT)
    made: list[str | Exception] = []

    def make() -> None:
        try:
            barrier.wait()
            made.append(claim().reference)
        except Exception as error:  # what a side raised is its answer
            made.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=make, daemon=True) for _ in range(sides)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)

    assert not any(thread.is_alive() for thread in threads), "a side never finished"
    assert [error for error in made if isinstance(error, Exception)] == []
    assert sorted(made) == [number(n) for n in range(1, sides + 1)]
