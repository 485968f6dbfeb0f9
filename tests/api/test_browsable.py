"""Renderers: JSON by default, and DRF's browsable API where the project renders it.

The API renders what the project's ``DEFAULT_RENDERER_CLASSES`` name (DRF's
default names JSON and the browsable API), with JSON always first: the answer to
``*/*`` and to no ``Accept``. Errors are JSON for every client, a browser on the
browsable API too (DESIGN.md section 4: never HTML).
"""

from __future__ import annotations

import html
import json

import pytest

from tests.api.conftest import url

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

JSON = "rest_framework.renderers.JSONRenderer"
BROWSABLE = "rest_framework.renderers.BrowsableAPIRenderer"
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.fixture
def renderers(settings):
    """Set the project's renderer classes: ``renderers(JSON, BROWSABLE)``."""
    def use(*classes: str) -> None:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                                   "DEFAULT_RENDERER_CLASSES": list(classes)}
    return use


def page_text(response) -> str:
    assert response["Content-Type"] == "text/html; charset=utf-8"
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("path", ["/api/", "/api/workflows/", "/api/instances/", "/api/tasks/"])
def test_a_browser_gets_the_browsable_page_where_the_project_renders_it(api, renderers, path):
    renderers(JSON, BROWSABLE)

    response = api.get(path, HTTP_ACCEPT=BROWSER)

    assert response.status_code == 200
    assert "<title>" in page_text(response)


def test_the_browsable_instance_page_shows_its_json(api, renderers, make_instance):
    renderers(JSON, BROWSABLE)
    instance = make_instance(started=True)

    text = page_text(api.get(url(instance), HTTP_ACCEPT=BROWSER))

    assert f'"id": "{instance.pk}"' in text
    assert '"current_step": "account"' in text


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_json_is_the_default_where_the_browsable_api_is_on(api, renderers, accept):
    renderers(JSON, BROWSABLE)

    response = api.get("/api/instances/", **({"HTTP_ACCEPT": accept} if accept else {}))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_json_stays_the_default_when_the_project_lists_the_browsable_api_first(api, renderers):
    renderers(BROWSABLE, JSON)

    response = api.get("/api/instances/", HTTP_ACCEPT="*/*")

    assert response["Content-Type"] == "application/json"


def test_a_project_that_renders_only_json_answers_a_browser_406_in_json(api, renderers):
    renderers(JSON)

    response = api.get("/api/instances/", HTTP_ACCEPT="text/html")

    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_acceptable"


def test_errors_are_json_for_json_clients_where_the_browsable_api_is_on(api, renderers,
                                                                       make_instance):
    renderers(JSON, BROWSABLE)

    response = api.post(url(make_instance(), "next"), HTTP_ACCEPT="*/*")

    assert response.status_code == 409
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_running"


def test_an_error_is_json_for_a_browser_on_the_browsable_api_too(api, renderers,
                                                                 make_instance):
    renderers(JSON, BROWSABLE)
    instance = make_instance(started=True)

    response = api.get(url(instance, "cancel"), HTTP_ACCEPT=BROWSER)

    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "method_not_allowed"


def test_the_browsable_list_s_form_sends_what_create_takes(api, renderers):
    renderers(JSON, BROWSABLE)

    text = page_text(api.get("/api/instances/", HTTP_ACCEPT=BROWSER))

    start = text.index("{", text.index('name="_content"'))
    sent = json.JSONDecoder().raw_decode(text[start:])[0]
    assert set(sent) == {"workflow", "state", "start", "reference"}
