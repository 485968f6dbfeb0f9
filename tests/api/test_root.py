"""The API root, ``GET /api/`` (DESIGN.md §4): a JSON object naming the collections' URLs."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

LINKS = {"workflows": "http://testserver/api/workflows/",
         "instances": "http://testserver/api/instances/",
         "tasks": "http://testserver/api/tasks/",
         "schedules": "http://testserver/api/schedules/",
         "schema": "http://testserver/api/schema/"}


def test_the_root_links_to_each_collection_and_the_schema(api):
    response = api.get("/api/")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == LINKS


@pytest.mark.parametrize("name", sorted(LINKS))
def test_every_link_of_the_root_answers(api, name):
    assert api.get(api.get("/api/").json()[name]).status_code == 200


def test_the_root_needs_a_signed_in_user(client_as):
    response = client_as(None).get("/api/")

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_the_root_answers_only_get(api):
    response = api.post("/api/", {}, format="json")

    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
