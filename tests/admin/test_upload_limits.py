"""A form post over Django's request limits: the form again with the limit, never a bare 400.

Django refuses such a post when ``request.POST`` is first read, and with CSRF
enforced (as a browser has it) the CSRF check is the first to read it; so these
tests post as a browser does, with the cookie and the form's token. The CSRF
check itself still holds for every post that can be read.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from django_workflows.models import WorkflowInstance
from tests.factories import WorkflowInstanceFactory

from .conftest import shown_messages
from .test_state_form import form_errors, reload

pytestmark = pytest.mark.django_db

ADD = "admin:django_workflows_workflowinstance_add"
LIMIT = 2000  # DATA_UPLOAD_MAX_MEMORY_SIZE in these tests


def instance_page(instance: WorkflowInstance) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])


def browser(user) -> Client:
    """A client that enforces CSRF, as a browser's requests are checked."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def token_of(client: Client, page: str) -> str:
    """The CSRF token of the form on ``page`` (getting it sets the cookie too)."""
    content = client.get(page).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', content).group(1)


def state_post(state_text: str, revision: int, token: str | None) -> dict[str, str]:
    data = {"_state": "Save state", "state": state_text, "revision": str(revision)}
    if token is not None:
        data["csrfmiddlewaretoken"] = token
    return data


def oversized_state() -> str:
    return json.dumps({"email": "x" * (LIMIT * 2), "plan": None})


# -- the instance page's state form --------------------------------------------------------


def as_a_form(client: Client, page: str, data: dict[str, str]):
    """Posted as a browser posts a form without files (the test client sends multipart)."""
    return client.post(page, urlencode(data), content_type="application/x-www-form-urlencoded")


def as_multipart(client: Client, page: str, data: dict[str, str]):
    return client.post(page, data)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
@pytest.mark.parametrize("send", [as_a_form, as_multipart])
def test_a_state_over_the_upload_limit_shows_the_form_with_the_limit(superuser, send):
    instance = WorkflowInstanceFactory(started=True)
    client = browser(superuser)
    token = token_of(client, instance_page(instance))

    response = send(client, instance_page(instance),
                    state_post(oversized_state(), instance.revision, token))

    assert response.status_code == 200
    errors = form_errors(response)
    assert f"more than the {LIMIT} bytes" in errors
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in errors
    assert reload(instance).revision == instance.revision


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_a_state_over_the_upload_limit_shows_the_saved_state_again(superuser):
    instance = WorkflowInstanceFactory(started=True)
    client = browser(superuser)
    token = token_of(client, instance_page(instance))

    response = client.post(instance_page(instance),
                           state_post(oversized_state(), instance.revision, token))

    content = response.content.decode()
    textarea = re.search(r"<textarea.*?</textarea>", content, re.S).group(0)
    assert "&quot;email&quot;: &quot;&quot;" in textarea
    assert f'name="revision" value="{instance.revision}"' in content


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_a_state_over_the_upload_limit_without_a_csrf_token_changes_nothing(superuser):
    instance = WorkflowInstanceFactory(started=True)

    response = browser(superuser).post(instance_page(instance),
                                       state_post(oversized_state(), instance.revision, None))

    assert response.status_code == 200  # the form with the limit; nothing could be read
    assert reload(instance).revision == instance.revision


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
@pytest.mark.parametrize("send", [as_a_form, as_multipart])
def test_a_command_behind_an_oversized_field_without_a_csrf_token_is_not_run(superuser, send):
    instance = WorkflowInstanceFactory()
    # Django refuses a multipart body half-way: a second read would find the fields after.
    data = {"filler": "x" * (LIMIT * 2), "_command": "start", "revision": str(instance.revision)}

    response = send(browser(superuser), instance_page(instance), data)

    assert response.status_code == 200
    assert reload(instance).status == "idle"


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_a_state_over_the_upload_limit_is_shown_without_csrf_enforcement_too(root_client):
    instance = WorkflowInstanceFactory(started=True)

    response = root_client.post(instance_page(instance),
                                state_post(oversized_state(), instance.revision, None))

    assert response.status_code == 200
    assert f"more than the {LIMIT} bytes" in form_errors(response)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_a_state_over_the_upload_limit_for_a_cancelled_instance_says_so_on_the_page(superuser):
    instance = WorkflowInstanceFactory(started=True, commands=["cancel"])
    client = browser(superuser)
    token = token_of(client, instance_page(instance))

    response = client.post(instance_page(instance),
                           state_post(oversized_state(), instance.revision, token))

    # Its page has no state form to show the error on: the page's messages say it.
    assert response.status_code == 200
    assert [level for level, _ in shown_messages(response)] == ["error"]
    assert f"more than the {LIMIT} bytes" in shown_messages(response)[0][1]


@override_settings(DATA_UPLOAD_MAX_NUMBER_FIELDS=10)
def test_a_post_with_more_fields_than_django_takes_shows_the_form_with_the_limit(superuser):
    instance = WorkflowInstanceFactory(started=True)
    client = browser(superuser)
    token = token_of(client, instance_page(instance))
    data = {**state_post('{"email": "", "plan": null}', instance.revision, token),
            **{f"extra{i}": "x" for i in range(20)}}

    response = client.post(instance_page(instance), data)

    assert response.status_code == 200
    assert "more than the 10 fields" in form_errors(response)
    assert reload(instance).revision == instance.revision


def test_a_state_post_without_a_csrf_token_is_refused_and_not_saved(superuser):
    instance = WorkflowInstanceFactory(started=True)

    response = browser(superuser).post(instance_page(instance), state_post(
        '{"email": "ann@example.com", "plan": null}', instance.revision, None))

    assert response.status_code == 403
    assert reload(instance).state == {"email": "", "plan": None}


def test_a_state_post_with_a_wrong_csrf_token_is_refused_and_not_saved(superuser):
    instance = WorkflowInstanceFactory(started=True)
    client = browser(superuser)
    token_of(client, instance_page(instance))  # the cookie, but another token

    response = client.post(instance_page(instance), state_post(
        '{"email": "ann@example.com", "plan": null}', instance.revision, "x" * 64))

    assert response.status_code == 403
    assert reload(instance).state == {"email": "", "plan": None}


@pytest.mark.parametrize("send", [as_a_form, as_multipart])
def test_a_state_post_with_its_csrf_token_is_saved(superuser, send):
    instance = WorkflowInstanceFactory(started=True)
    client = browser(superuser)
    token = token_of(client, instance_page(instance))

    response = send(client, instance_page(instance), state_post(
        '{"email": "ann@example.com", "plan": null}', instance.revision, token))

    assert response.status_code == 302
    assert reload(instance).state == {"email": "ann@example.com", "plan": None}


def test_a_command_post_without_a_csrf_token_is_refused_and_changes_nothing(superuser):
    instance = WorkflowInstanceFactory()

    response = browser(superuser).post(instance_page(instance), {
        "_command": "start", "revision": str(instance.revision)})

    assert response.status_code == 403
    assert reload(instance).status == "idle"


def test_the_instance_page_still_sets_the_csrf_cookie(superuser):
    client = browser(superuser)

    client.get(instance_page(WorkflowInstanceFactory()))

    assert client.cookies["csrftoken"].value


# -- the add page --------------------------------------------------------------------------


def add_post(state_text: str, token: str | None) -> dict[str, str]:
    data = {"workflow": "wizard", "state": state_text, "start": "on"}
    if token is not None:
        data["csrfmiddlewaretoken"] = token
    return data


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
@pytest.mark.parametrize("send", [as_a_form, as_multipart])
def test_an_initial_state_over_the_upload_limit_shows_the_add_form_with_the_limit(superuser,
                                                                                  send):
    client = browser(superuser)
    token = token_of(client, reverse(ADD))

    response = send(client, reverse(ADD), add_post(oversized_state(), token))

    assert response.status_code == 200
    content = response.content.decode()
    assert f"more than the {LIMIT} bytes" in content
    assert 'name="workflow"' in content
    assert not WorkflowInstance.objects.exists()


def test_an_add_post_without_a_csrf_token_is_refused_and_creates_nothing(superuser):
    response = browser(superuser).post(reverse(ADD), add_post("", None))

    assert response.status_code == 403
    assert not WorkflowInstance.objects.exists()


def test_an_add_post_with_its_csrf_token_creates_the_instance(superuser):
    client = browser(superuser)
    token = token_of(client, reverse(ADD))

    response = client.post(reverse(ADD), add_post("", token))

    assert response.status_code == 302
    assert WorkflowInstance.objects.get().status == "running"
