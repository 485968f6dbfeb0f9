"""The state form: saved through ``update_state``; schema, size and revision checked."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.conf import settings
from django.test import override_settings

from django_workflows import services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.factories import WorkflowInstanceFactory

from .conftest import instance_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db


def reload(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def save_state(client, instance, state, *, revision=None):
    text = state if isinstance(state, str) else json.dumps(state)
    revision = reload(instance).revision if revision is None else revision
    return client.post(instance_url(instance), {"_state": "Save state", "state": text,
                                                "revision": revision})


def form_errors(response) -> str:
    content = response.content.decode()
    found = re.search(r'<form method="post" id="dwf-state-form".*?</form>', content, re.S)
    assert found, "the state form is not on the page"
    return html.unescape(re.sub(r"<[^>]+>", " ", " ".join(
        re.findall(r'class="(?:errorlist|errornote)[^"]*"[^>]*>(.*?)</(?:ul|div)>',
                   found.group(0), re.S))))


def test_saving_a_valid_state_replaces_it_and_says_so(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, {"email": "ann@example.com", "plan": "pro"})

    assert response.status_code == 302
    assert reload(instance).state == {"email": "ann@example.com", "plan": "pro"}
    assert shown_messages(root_client.get(response["Location"])) == [
        ("success", "The state was saved.")]


def test_saving_the_state_goes_through_the_service(operator):
    instance = WorkflowInstanceFactory(started=True)

    save_state(logged_in(operator), instance, {"email": "ann@example.com", "plan": None})

    event = WorkflowEvent.objects.filter(instance=instance).order_by("-sequence").first()
    assert (event.type, event.actor.username) == ("state-update", "operator")


def test_saving_a_state_unblocks_a_blocked_instance(root_client):
    instance = WorkflowInstanceFactory(blocked=True)

    save_state(root_client, instance, {"email": "ann@example.com", "plan": None})

    assert (reload(instance).status, reload(instance).errors) == ("running", [])


def test_state_breaking_the_schema_is_shown_and_not_saved(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, {"email": "ann@example.com", "plan": "gold",
                                                  "age": -1})

    assert response.status_code == 200
    errors = form_errors(response)
    assert "plan: 'gold' is not one of" in errors
    assert "age: -1 is less than the minimum of 0" in errors
    assert reload(instance).state == {"email": "", "plan": None}


def test_state_that_is_not_json_is_shown_and_not_saved(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, '{"email": ')

    assert response.status_code == 200
    assert "Enter valid JSON" in form_errors(response)
    assert reload(instance).revision == instance.revision


def test_state_that_is_not_an_object_is_shown_and_not_saved(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, "[1, 2]")

    assert "The state must be a JSON object" in form_errors(response)


def test_state_the_database_cannot_store_is_shown_and_not_saved(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, {"email": "a\u0000b", "plan": None})

    assert response.status_code == 200
    assert "email: This text must not contain NUL characters." in form_errors(response)
    assert reload(instance).revision == instance.revision


def test_state_nested_too_deeply_is_shown_and_not_saved(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, '{"email": ' + "[" * 100_000)

    assert response.status_code == 200
    assert "nested deeper than 100 levels" in form_errors(response)
    assert reload(instance).revision == instance.revision


def test_state_larger_than_the_limit_is_shown_and_not_saved(root_client):
    instance = WorkflowInstanceFactory(started=True)

    with override_settings(DJANGO_WORKFLOWS={**settings.DJANGO_WORKFLOWS,
                                             "MAX_STATE_BYTES": 64}):
        response = save_state(root_client, instance, {"email": "a" * 100, "plan": None})

    assert response.status_code == 200
    assert "the limit is 64 bytes" in form_errors(response)
    assert reload(instance).state == {"email": "", "plan": None}


def test_state_edited_from_a_stale_revision_is_refused_and_shown(root_client):
    instance = WorkflowInstanceFactory(started=True)
    seen = reload(instance).revision
    services.update_state(instance, {"email": "bob@example.com", "plan": None})

    response = save_state(root_client, instance, {"email": "ann@example.com", "plan": None},
                          revision=seen)

    assert response.status_code == 200
    assert "someone changed this instance while you edited it" in form_errors(response)
    assert reload(instance).state["email"] == "bob@example.com"


def test_after_a_stale_revision_the_form_keeps_the_edit_to_save_over_the_new_one(root_client):
    instance = WorkflowInstanceFactory(started=True)
    seen = reload(instance).revision
    services.update_state(instance, {"email": "bob@example.com", "plan": None})

    response = save_state(root_client, instance, {"email": "ann@example.com", "plan": None},
                          revision=seen)

    content = response.content.decode()
    assert "ann@example.com" in re.search(r"<textarea.*?</textarea>", content, re.S).group(0)
    assert f'name="revision" value="{reload(instance).revision}"' in content


def test_state_of_a_viewer_is_refused_with_a_message_and_not_saved(viewer):
    instance = WorkflowInstanceFactory(started=True)
    client = logged_in(viewer)

    response = save_state(client, instance, {"email": "x@example.com", "plan": None})

    assert response.status_code == 302
    assert reload(instance).state == {"email": "", "plan": None}
    assert shown_messages(client.get(response["Location"])) == [
        ("error", "State not saved: You do not have permission to change workflow instances.")]


def test_state_refused_by_the_definitions_rule_is_not_saved(clerk):
    instance = WorkflowInstanceFactory(workflow="admin-guarded", started=True)
    client = logged_in(clerk)

    response = save_state(client, instance, {"note": "x"})

    assert reload(instance).state == {}
    [(level, text)] = shown_messages(client.get(response["Location"]))
    assert level == "error" and "does not allow you to update state" in text


def test_state_of_staff_without_permissions_is_forbidden(outsider):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(logged_in(outsider), instance, {"email": "x@example.com"})

    assert response.status_code == 403


@pytest.mark.parametrize(("text", "why"), [
    ('{"email": "", "plan": null, "n": ' + "9" * 5000 + "}", "5000 digits"),
    ('{"email": "", "plan": null, "n": -' + "9" * 5000 + "}", "5000 digits"),
    ('{"email": "", "plan": null, "n": 1e999}', "out of range"),
    ('{"email": "", "plan": null, "n": -1e999}', "out of range"),
    ('{"email": "", "plan": null, "n": NaN}', "NaN is not valid JSON"),
    ('{"email": "", "plan": null, "n": Infinity}', "Infinity is not valid JSON"),
    ('{"email": "", "plan": null, "n": -Infinity}', "Infinity is not valid JSON"),
])
def test_state_with_a_number_json_cannot_carry_is_shown_and_not_saved(root_client, text, why):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, text)

    assert response.status_code == 200
    assert why in form_errors(response)
    assert reload(instance).revision == instance.revision


@pytest.mark.parametrize("revision", ["x", "", "9" * 5000, "-1"])
def test_state_posted_with_a_broken_revision_says_so_and_is_not_saved(root_client, revision):
    instance = WorkflowInstanceFactory(started=True)

    response = save_state(root_client, instance, {"email": "ann@example.com", "plan": None},
                          revision=revision)

    assert response.status_code == 200
    assert "Reload the page" in form_errors(response)
    assert reload(instance).state == {"email": "", "plan": None}


@pytest.mark.parametrize("text", ['{"email": "ann@example.com", "plan": null}', "[]"])
def test_state_posted_to_a_cancelled_instance_is_refused_with_a_message(root_client, text):
    instance = WorkflowInstanceFactory(started=True, commands=["cancel"])

    response = save_state(root_client, instance, text)

    assert response.status_code == 302
    [(level, message)] = shown_messages(root_client.get(response["Location"]))
    assert level == "error" and message.startswith("State not saved: ")
    assert reload(instance).state == {"email": "", "plan": None}
