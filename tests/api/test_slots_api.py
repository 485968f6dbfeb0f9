"""An operation whose attempt waits for a slot (its ``Limit``) says so in the API: its
status stays ``queued``, as the instance records it, and ``waiting_for`` says what for.

``api-charges``: one operation held to 2 running per merchant. Nothing is ever handed to
a worker here (the test's transaction never commits); the first attempt is claimed by
hand, so it runs.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_workflows import Limit, Operation, Step, Workflow, registry, services
from django_workflows.models import Attempt, WorkflowInstance
from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

WAITING = "waiting for a slot (merchant-7: 2 of 2 running)"


@pytest.fixture(autouse=True)
def charges_workflow():
    definition = Workflow(id="api-charges", steps=[Step("charge", operations=[Operation(
        "charge", run=lambda ctx: "charged",
        concurrency=Limit(key=lambda ctx: f"merchant-{ctx.state['merchant']}", max=2))])])
    registry.register(definition, origin="tests.api.test_slots_api")
    yield
    registry.unregister(definition.id)


@pytest.fixture
def charges(owner) -> list[WorkflowInstance]:
    """Three charges of merchant 7: the first runs, the second is queued, the third waits."""
    made = [services.create("api-charges", state={"merchant": 7}, start=True, user=owner)
            for _ in range(3)]
    assert services.claim_attempt(made[0].operations[0]["token"], worker="w-1") is not None
    return made


def operation_of(body: dict) -> dict:
    (operation,) = body["operations"]
    return operation


def test_a_waiting_operation_says_what_it_waits_for(api, charges):
    operation = operation_of(api.get(url(charges[2])).json())

    assert Attempt.objects.get(token=charges[2].operations[0]["token"]).status == "waiting"
    assert (operation["status"], operation["waiting_for"]) == ("queued", WAITING)


def test_a_running_or_queued_operation_waits_for_nothing(api, charges):
    running = operation_of(api.get(url(charges[0])).json())
    queued = operation_of(api.get(url(charges[1])).json())

    assert (running["status"], running["waiting_for"]) == ("running", None)
    assert (queued["status"], queued["waiting_for"]) == ("queued", None)


def test_the_list_says_what_each_waits_for(api, charges):
    results = api.get("/api/instances/", {"workflow": "api-charges"}).json()["results"]

    shown = {item["id"]: operation_of(item)["waiting_for"] for item in results}
    assert shown == {str(charges[0].pk): None, str(charges[1].pk): None,
                     str(charges[2].pk): WAITING}


def test_the_list_counts_a_limit_once_however_many_wait_for_it(api, owner, charges):
    for _ in range(3):
        services.create("api-charges", state={"merchant": 7}, start=True, user=owner)

    with CaptureQueriesContext(connection) as queries:
        results = api.get("/api/instances/", {"workflow": "api-charges"}).json()["results"]

    assert [operation_of(item)["waiting_for"] for item in results].count(WAITING) == 4
    assert len([q for q in queries if "COUNT(" in q["sql"] and "limit_key" in q["sql"]]) == 1


def test_the_schema_documents_waiting_for_as_a_nullable_string(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()

    field = schema["components"]["schemas"]["Operation"]["properties"]["waiting_for"]
    assert (field["type"], field["nullable"]) == ("string", True)
    assert "waiting_for" in schema["components"]["schemas"]["Operation"]["required"]
