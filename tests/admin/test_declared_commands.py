"""A command declared in one class gets its admin button, with a form of what it takes,
from that alone (the commands are in ``tests/declared_commands.py``)."""

from __future__ import annotations

import json

import pytest

from django_workflows import services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.declared_commands import declared

from .conftest import instance_url, shown_messages

pytestmark = pytest.mark.django_db


@pytest.fixture
def commands():
    with declared() as made:
        yield made


@pytest.fixture
def no_workers(settings):
    """Work handed out stays queued: the operation has not started."""
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "RUNNER": "tests.admin.runners.HoldingRunner"}


def post(client, instance, name, **fields):
    revision = WorkflowInstance.objects.get(pk=instance.pk).revision
    return client.post(instance_url(instance), {"_command": name, "revision": revision,
                                                **fields}, follow=True)


def test_a_command_with_a_json_field_gets_a_button_and_a_json_input(root_client, commands):
    instance = services.create("wizard", start=True)

    page = root_client.get(instance_url(instance)).content.decode()
    response = post(root_client, instance, "note", **{"note-value": '{"a": [1, "two"]}'})

    assert 'value="note"' in page and 'name="note-value"' in page
    assert WorkflowInstance.objects.get(pk=instance.pk).state["notes"] == [{"a": [1, "two"]}]
    assert shown_messages(response)[0][0] == "success"


def test_a_value_that_is_not_json_is_a_message_and_changes_nothing(root_client, commands):
    instance = services.create("wizard", start=True)

    response = post(root_client, instance, "note", **{"note-value": "{not json"})

    assert shown_messages(response) == [("error", "Note not done: Value: Enter a valid JSON.")]
    assert "notes" not in WorkflowInstance.objects.get(pk=instance.pk).state


def test_a_command_on_an_operation_is_offered_on_that_operations_row(root_client, commands,
                                                                      no_workers):
    instance = services.create("admin-slow", start=True)  # its operation stays queued

    page = root_client.get(instance_url(instance)).content.decode()
    response = post(root_client, instance, "hold_operation",
                    **{"hold_operation-operation": "count", "hold_operation-hours": "4"})

    row = page[page.index('data-operation="count"'):]
    row = row[:row.index("</tr>")]
    assert 'value="hold_operation"' in row and 'name="hold_operation-hours"' in row
    assert 'value="skip_operation"' in row
    assert shown_messages(response)[0][0] == "success"
    event = WorkflowEvent.objects.get(instance=instance, type="operation-held")
    assert event.data == {"operation": "count", "hours": 4}


def test_a_started_operation_offers_neither(root_client, commands, no_workers):
    instance = services.create("admin-slow", start=True)
    token = WorkflowInstance.objects.get(pk=instance.pk).operations[0]["token"]
    services.claim_attempt(token, worker="test")  # a worker runs it now

    page = root_client.get(instance_url(instance)).content.decode()

    assert 'value="hold_operation"' not in page and 'value="skip_operation"' not in page


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_person_gives_both_in_chromium(page, commands, no_workers):
    instance = services.create("admin-slow", start=True)
    page.goto(instance_url(instance))

    page.fill("textarea[name=note-value]", json.dumps({"called": "customer"}))
    page.click("#dwf-commands button[value=note]")
    page.wait_for_selector(".messagelist .success")
    page.fill("tr[data-operation=count] input[name=hold_operation-hours]", "2")
    page.click("tr[data-operation=count] button[value=hold_operation]")
    page.wait_for_selector(".messagelist .success")

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert row.state["notes"] == [{"called": "customer"}]
    assert WorkflowEvent.objects.get(instance=instance, type="operation-held").data == {
        "operation": "count", "hours": 2}
