"""Lists: filters (django-filter), ordering, pages; the event log oldest first; definitions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_workflows import services
from django_workflows.engine import Progress
from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.runners.worker import DatabaseSink
from tests.api.conftest import url
from tests.factories import UserFactory

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


def as_ids(*instances: WorkflowInstance) -> list[str]:
    return [str(i.pk) for i in instances]


# -- filters -----------------------------------------------------------------------------


def test_filter_by_workflow(api, make_instance):
    make_instance(workflow="long-manual")
    wizard = make_instance()

    assert ids(api.get("/api/instances/", {"workflow": "wizard"})) == as_ids(wizard)


def test_filter_by_status(api, make_instance):
    make_instance()
    running = make_instance(started=True)

    assert ids(api.get("/api/instances/", {"status": "running"})) == as_ids(running)


def test_filter_by_several_statuses(api, make_instance):
    make_instance()
    running, blocked = make_instance(started=True), make_instance(blocked=True)

    found = ids(api.get("/api/instances/?status=running&status=blocked"))

    assert sorted(found) == sorted(as_ids(running, blocked))


def test_filter_by_current_step(api, make_instance):
    make_instance(workflow="long-manual", started=True)
    second = make_instance(workflow="long-manual", started=True, commands=["next"])

    assert ids(api.get("/api/instances/", {"current_step": "s1"})) == as_ids(second)


def test_filter_by_owner(client_as, superuser, owner, make_instance):
    mine = make_instance()
    make_instance(owner=UserFactory())

    assert ids(client_as(superuser).get("/api/instances/", {"owner": owner.pk})) == as_ids(mine)


def test_filter_by_an_owner_id_no_user_has_answers_an_empty_page(client_as, superuser,
                                                                 make_instance):
    make_instance()
    missing = UserFactory()
    missing_id = missing.pk
    missing.delete()

    response = client_as(superuser).get("/api/instances/", {"owner": missing_id})

    assert response.status_code == 200, response.content
    assert response.json()["count"] == 0


def test_filter_by_owner_does_not_tell_a_missing_user_from_one_without_instances(
        client_as, stranger, make_instance):
    make_instance()
    missing = UserFactory()
    missing_id = missing.pk
    missing.delete()
    idle = UserFactory()
    api = client_as(stranger)

    answers = [api.get("/api/instances/", {"owner": pk}) for pk in (missing_id, idle.pk)]

    assert [(a.status_code, a.json()) for a in answers] == [
        (200, {"count": 0, "next": None, "previous": None, "results": []})] * 2


def test_filter_by_creation_time(api, make_instance):
    old = make_instance()
    WorkflowInstance.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=3))
    new = make_instance()
    since = (timezone.now() - timedelta(days=1)).isoformat()

    assert ids(api.get("/api/instances/", {"created_after": since})) == as_ids(new)
    assert ids(api.get("/api/instances/", {"created_before": since})) == as_ids(old)


def test_filter_times_may_have_any_utc_offset(api, make_instance):
    instance = make_instance()
    WorkflowInstance.objects.filter(pk=instance.pk).update(
        created_at=datetime(2030, 1, 1, 12, tzinfo=UTC))

    found = ids(api.get("/api/instances/", {"created_after": "2030-01-02T09:00:00+21:10",
                                             "created_before": "2030-01-01T12:00:01+00:00"}))

    assert found == as_ids(instance)


def test_filter_by_update_time(api, make_instance):
    stale = make_instance()
    WorkflowInstance.objects.filter(pk=stale.pk).update(
        updated_at=timezone.now() - timedelta(days=3))
    make_instance()
    since = (timezone.now() - timedelta(days=1)).isoformat()

    assert ids(api.get("/api/instances/", {"updated_before": since})) == as_ids(stale)


# -- ordering and pages ------------------------------------------------------------------


def test_the_newest_instances_come_first(api, make_instance):
    first, second, third = make_instance(), make_instance(), make_instance()

    assert ids(api.get("/api/instances/")) == as_ids(third, second, first)


def test_ordering_by_a_field(api, make_instance):
    first, second = make_instance(), make_instance()
    WorkflowInstance.objects.filter(pk=first.pk).update(updated_at=timezone.now())

    assert ids(api.get("/api/instances/", {"ordering": "-updated_at"})) == as_ids(first, second)
    assert ids(api.get("/api/instances/", {"ordering": "created_at"})) == as_ids(first, second)


def test_pages_hold_page_size_instances_and_link_to_the_next(api, make_instance):
    made = [make_instance() for _ in range(5)]

    page = api.get("/api/instances/", {"page_size": 2, "ordering": "created_at"}).json()

    assert page["count"] == 5
    assert [item["id"] for item in page["results"]] == as_ids(*made[:2])
    assert "page=2" in page["next"] and page["previous"] is None


def test_pages_together_hold_every_instance_once_even_with_equal_sort_keys(api, make_instance):
    made = [make_instance() for _ in range(5)]
    WorkflowInstance.objects.update(created_at=timezone.now())

    seen = []
    for number in (1, 2, 3):
        seen += ids(api.get("/api/instances/", {"page_size": 2, "page": number}))

    assert sorted(seen) == sorted(as_ids(*made))


def running_operation(make_instance) -> WorkflowInstance:
    """An instance whose operation a worker claimed and reports on."""
    instance = make_instance(workflow="back-office", started=True)
    token = instance.operations[0]["token"]
    services.claim_attempt(token)
    sink = DatabaseSink(token, threaded=False)
    sink.report(status="running", progress=Progress(1, 2, "charging"), logs=["charged"])
    sink.close()
    return instance


def test_a_page_reads_running_operations_in_one_query(api, make_instance):
    running_operation(make_instance)
    api.get("/api/instances/")  # the user's permissions, read once and kept
    with CaptureQueriesContext(connection) as few:
        api.get("/api/instances/")
    for _ in range(4):
        running_operation(make_instance)

    with CaptureQueriesContext(connection) as many:
        results = api.get("/api/instances/").json()["results"]

    assert len(many) == len(few)
    assert [r["operations"][0]["logs"] for r in results] == [["charged"]] * 5


# -- events ------------------------------------------------------------------------------


def test_events_are_listed_oldest_first(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True, commands=["next", "back"])

    response = api.get(url(instance, "events"))

    assert response.status_code == 200
    body = response.json()
    assert [e["sequence"] for e in body["results"]] == list(range(1, body["count"] + 1))
    assert [e["type"] for e in body["results"]] == list(
        WorkflowEvent.objects.filter(instance=instance).order_by("sequence")
        .values_list("type", flat=True))
    assert (body["results"][0]["type"], body["results"][-1]["type"]) == ("start", "back")


def test_an_event_names_its_step_actor_and_revision(api, owner, make_instance):
    instance = make_instance()
    api.post(url(instance, "start"))

    event = api.get(url(instance, "events")).json()["results"][0]

    assert set(event) == {"sequence", "type", "step", "actor", "revision", "error", "data",
                          "created_at"}
    assert (event["type"], event["step"], event["actor"], event["revision"]) == (
        "start", None, owner.pk, 2)


def test_the_event_log_is_paginated(api, make_instance):
    instance = make_instance(workflow="long-manual", started=True,
                             commands=["next"] * 5)

    page = api.get(url(instance, "events"), {"page_size": 3, "page": 2}).json()

    assert [e["sequence"] for e in page["results"]] == [4, 5, 6]


def test_the_event_log_ignores_instance_filters(api, make_instance):
    instance = make_instance(started=True)

    assert api.get(url(instance, "events"), {"status": "idle"}).json()["count"] == 2


# -- definitions -------------------------------------------------------------------------


def test_workflows_lists_every_definition_with_steps_and_transitions(api):
    definitions = {d["id"]: d for d in api.get("/api/workflows/").json()}

    wizard = definitions["wizard"]
    assert (wizard["version"], wizard["title"]) == (1, "Wizard")
    assert [s["id"] for s in wizard["steps"]] == ["account", "plan", "confirm"]
    assert wizard["transitions"][0] == {"source": "account", "target": "plan",
                                        "guarded": False}


def test_a_workflow_answers_its_graph(api):
    body = api.get("/api/workflows/back-office/").json()

    assert [n["id"] for n in body["graph"]["nodes"]] == ["pay", "ship", "done"]
    assert body["graph"]["nodes"][0]["operations"] == ["charge"]
    assert [(e["source"], e["target"]) for e in body["graph"]["edges"]] == [
        ("pay", "ship"), ("ship", "done")]


def test_a_workflow_answers_its_state_schema(api):
    body = api.get("/api/workflows/wizard/").json()

    assert body["state_schema"]["properties"]["age"] == {"type": "integer", "minimum": 0}
