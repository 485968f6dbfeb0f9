"""The events admin: read-only, newest first, filtered by type, searched by instance."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.dbutil import column_sql
from tests.factories import WorkflowInstanceFactory

from .conftest import instance_url, logged_in

pytestmark = pytest.mark.django_db

EVENTS = "admin:django_workflows_workflowevent_changelist"


def listed(response) -> list[tuple[str, str]]:
    """(sequence, type) of the listed events."""
    return re.findall(r'<th class="field-sequence"><a [^>]*>(\d+)</a></th><td class="field-type">'
                      r"([\w-]+)</td>", response.content.decode())


def test_events_are_listed_newest_first_with_a_link_to_their_instance(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = root_client.get(reverse(EVENTS))

    assert listed(response) == [("2", "step-enter"), ("1", "start")]
    assert instance_url(instance) in response.content.decode()


def test_events_list_does_not_read_instance_states_or_snapshots(root_client):
    WorkflowInstanceFactory(started=True)

    with CaptureQueriesContext(connection) as queries:
        root_client.get(reverse(EVENTS))

    rows = [q["sql"] for q in queries if column_sql(WorkflowEvent, "type") in q["sql"]]
    assert rows
    assert not [sql for sql in rows if column_sql(WorkflowInstance, "state") in sql
                or column_sql(WorkflowInstance, "snapshot") in sql]


def test_events_filter_by_type(root_client):
    WorkflowInstanceFactory(started=True)

    response = root_client.get(reverse(EVENTS), {"type": "start"})

    assert listed(response) == [("1", "start")]


def test_events_filter_by_people_s_acts_lists_what_people_s_commands_recorded(root_client):
    from django_workflows import services

    instance = services.create("wizard", start=True)  # start: a person's act, step-enter not
    services.update_state(instance, {"email": "a@example.com", "plan": None})
    services.pause(instance, reason="checking")

    response = root_client.get(reverse(EVENTS), {"type": "people"})

    assert [kind for _, kind in listed(response)] == ["pause", "state-update", "start"]


def test_events_filter_by_a_type_with_a_nul_character_is_reported_not_a_500(root_client):
    WorkflowInstanceFactory(started=True)

    response = root_client.get(reverse(EVENTS), {"type": "st\x00art"})

    assert response.status_code == 302
    assert "e=1" in response["Location"]


def test_events_filter_by_a_type_that_does_not_exist_lists_nothing(root_client):
    WorkflowInstanceFactory(started=True)

    response = root_client.get(reverse(EVENTS), {"type": "explode"})

    assert response.status_code == 200
    assert listed(response) == []


def test_events_search_by_instance_id(root_client):
    wanted = WorkflowInstanceFactory(started=True)
    WorkflowInstanceFactory(started=True)

    response = root_client.get(reverse(EVENTS), {"q": str(wanted.pk)})

    assert len(listed(response)) == 2
    assert set(WorkflowEvent.objects.filter(instance=wanted).values_list("type", flat=True)) \
        == {t for _, t in listed(response)}


def test_events_search_by_something_else_finds_nothing(root_client):
    WorkflowInstanceFactory(started=True)

    assert listed(root_client.get(reverse(EVENTS), {"q": "start"})) == []


def test_event_page_is_read_only(root_client):
    event = WorkflowInstanceFactory(started=True).events.first()

    url = reverse("admin:django_workflows_workflowevent_change", args=[event.pk])
    content = root_client.get(url).content.decode()

    assert 'name="_save"' not in content
    assert root_client.post(url, {"type": "cancel"}).status_code == 403
    assert WorkflowEvent.objects.get(pk=event.pk).type == event.type


def test_events_cannot_be_added_or_deleted(root_client):
    event = WorkflowInstanceFactory(started=True).events.first()

    assert root_client.get(reverse("admin:django_workflows_workflowevent_add")).status_code \
        == 403
    assert root_client.post(reverse("admin:django_workflows_workflowevent_delete",
                                    args=[event.pk]), {"post": "yes"}).status_code == 403
    assert WorkflowEvent.objects.filter(pk=event.pk).exists()


def test_events_are_open_to_staff_with_the_view_permission(viewer):
    WorkflowInstanceFactory(started=True)

    assert len(listed(logged_in(viewer).get(reverse(EVENTS)))) == 2


def test_events_are_forbidden_to_staff_without_permissions(outsider):
    assert logged_in(outsider).get(reverse(EVENTS)).status_code == 403
