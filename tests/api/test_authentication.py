"""Who is not signed in: 401 with a challenge when an authentication class has one, else 403.

DRF asks only the first authentication class for its ``WWW-Authenticate``
challenge; the API asks each, so a project that lists Session before Basic (the
example project, the quickstart) answers 401 as a Basic client expects.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

SESSION = "rest_framework.authentication.SessionAuthentication"
BASIC = "rest_framework.authentication.BasicAuthentication"
ENDPOINTS = ["/api/", "/api/workflows/", "/api/instances/", "/api/tasks/", "/api/schema/"]


@pytest.fixture
def authentication(settings):
    """Set the project's authentication classes: ``authentication(SESSION, BASIC)``."""
    def use(*classes: str) -> None:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                                   "DEFAULT_AUTHENTICATION_CLASSES": list(classes)}
    return use


@pytest.mark.parametrize("path", ENDPOINTS)
def test_session_before_basic_answers_401_with_the_basic_challenge(authentication, path):
    from rest_framework.test import APIClient

    authentication(SESSION, BASIC)

    response = APIClient().get(path)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
    assert response.json()["code"] == "not_authenticated"


def test_wrong_basic_credentials_behind_session_answer_401(authentication):
    from rest_framework.test import APIClient

    authentication(SESSION, BASIC)

    response = APIClient().get("/api/instances/", HTTP_AUTHORIZATION="Basic bm86bm8=")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
    assert response.json()["code"] == "authentication_failed"


@pytest.mark.parametrize("path", ENDPOINTS)
def test_session_alone_has_no_challenge_and_answers_403(authentication, path):
    from rest_framework.test import APIClient

    authentication(SESSION)

    response = APIClient().get(path)

    assert response.status_code == 403
    assert "WWW-Authenticate" not in response
    assert response.json()["code"] == "not_authenticated"


def test_a_command_without_credentials_answers_401_behind_session(authentication,
                                                                  make_instance):
    from rest_framework.test import APIClient

    authentication(SESSION, BASIC)

    response = APIClient().post(f"/api/instances/{make_instance().pk}/start/")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
