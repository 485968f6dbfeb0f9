"""An operation's journal in the API (``GET .../operations/<id>/journal/``), what its code
waits for (``waiting.operation``), and ``POST .../retry/`` from one of its entries."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import JournalEntry
from tests.api.conftest import url
from tests.factories import UserFactory
from tests.testapp.models import Note

pytestmark = [pytest.mark.needs_api,
              pytest.mark.django_db(transaction=True)]  # the immediate runner runs on commit


def journal_url(instance, operation: str = "quote") -> str:
    return url(instance, f"operations/{operation}/journal")


@pytest.fixture
def failed_quote(owner):
    Note.objects.create(text="rate 0")  # stale: the step "price" fails on it
    instance = services.create("durable-quote", start=True, user=owner)
    instance.refresh_from_db()
    assert instance.status == "failed"
    return instance


def test_the_journal_lists_each_entry_with_its_times_tries_and_result(api, failed_quote):
    response = api.get(journal_url(failed_quote))

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["count"], body["next"]) == (2, None)
    assert [{key: entry[key] for key in ("position", "name", "kind", "value", "tries")}
            for entry in body["results"]] == [
        {"position": 0, "name": "load", "kind": "step", "value": [1, 2], "tries": 1},
        {"position": 1, "name": "rate", "kind": "step", "value": 0, "tries": 1}]
    for entry in body["results"]:
        assert entry["started_at"] <= entry["finished_at"]  # ISO 8601, in one time zone
        assert entry["finished_at"].startswith(str(failed_quote.created_at.year))


def test_an_operation_the_instance_does_not_have_answers_404(api, failed_quote):
    response = api.get(journal_url(failed_quote, "ship"))

    assert response.status_code == 404
    assert response.json() == {"detail": 'The instance has no operation "ship".',
                               "code": "not_found"}


def test_another_user_s_journal_answers_404(client_as, failed_quote):
    response = client_as(UserFactory()).get(journal_url(failed_quote))

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_waiting_names_the_operation_whose_code_waits_and_its_entry(api, owner):
    instance = services.create("durable-billing", state={"lines": [1], "intent": "pi_7"},
                               start=True, user=owner)

    waiting = api.get(url(instance)).json()["waiting"]
    journal = api.get(journal_url(instance, "bill")).json()["results"]

    assert {key: waiting[key] for key in ("kind", "name", "correlation", "operation")} == {
        "kind": "signal", "name": "paid", "correlation": "pi_7", "operation": "bill"}
    assert waiting["position"] == len(journal)  # the entry after the last one recorded
    assert [entry["kind"] for entry in journal] == ["step", "sleep"]


def test_retry_from_a_step_runs_it_again_and_the_journal_shows_the_new_entries(
        api, failed_quote):
    Note.objects.create(text="rate 5")

    response = api.post(url(failed_quote, "retry"), {"operation": "quote", "from_step": 1},
                        format="json")

    assert response.status_code == 200, response.json()
    instance = api.get(url(failed_quote)).json()
    assert (instance["status"], instance["current_step"]) == ("running", "done")
    journal = api.get(journal_url(failed_quote)).json()["results"]
    assert [(entry["name"], entry["value"]) for entry in journal] == [
        ("load", [1, 2]), ("rate", 5), ("price", 15)]


def test_a_refused_retry_from_a_step_answers_409_with_its_code_and_keeps_the_rows(
        api, failed_quote):
    response = api.post(url(failed_quote, "retry"), {"operation": "quote", "from_step": 2},
                        format="json")

    assert response.status_code == 409
    assert response.json() == {
        "code": "no_journal_entry",
        "detail": 'The journal of operation "quote" has no entry at position 2: it holds 2 '
                  "(0 to 1)"}
    assert JournalEntry.objects.filter(instance=failed_quote).count() == 2


def test_a_position_alone_answers_409_retry_from_incomplete(api, failed_quote):
    response = api.post(url(failed_quote, "retry"), {"from_step": 0}, format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "retry_from_incomplete"


def test_a_position_that_is_no_number_answers_400_naming_the_field(api, failed_quote):
    response = api.post(url(failed_quote, "retry"), {"operation": "quote", "from_step": "x"},
                        format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert list(response.json()["fields"]) == ["from_step"]
    assert JournalEntry.objects.filter(instance=failed_quote).count() == 2


def test_a_plain_retry_still_takes_no_body(api, failed_quote):
    response = api.post(url(failed_quote, "retry"))

    assert response.status_code == 200
    # The stale rate, replayed: it failed again.
    assert api.get(url(failed_quote)).json()["status"] == "failed"


def test_the_schema_documents_the_journal_and_the_retry_s_fields(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()

    journal = schema["paths"]["/api/instances/{id}/operations/{operation}/journal/"]["get"]
    assert {"200", "401", "403", "404"} <= set(journal["responses"])
    page = journal["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    entry = schema["components"]["schemas"][page.rsplit("/", 1)[1]]["properties"]["results"]
    fields = schema["components"]["schemas"][entry["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(fields["properties"]) == {"position", "name", "kind", "value", "tries",
                                         "started_at", "finished_at"}
    body = schema["paths"]["/api/instances/{id}/retry/"]["post"]["requestBody"]
    retry = schema["components"]["schemas"][
        body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
    assert retry["properties"]["from_step"]["type"] == "integer"
    assert retry["properties"]["operation"]["type"] == "string"
    assert not retry.get("required")
