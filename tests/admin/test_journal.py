"""The instance page shows an operation's journal under its row (durable code): each entry
with its times, tries and result, what its code waits for now, and "Retry from here" on
each entry of a failed instance, through the page's command flow."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.engine import JournalEntry as Entry
from django_workflows.models import JournalEntry, WorkflowInstance, WorkflowTask
from django_workflows.services.journal import DatabaseJournal
from tests.factories import UserFactory
from tests.testapp.models import Note

from .conftest import instance_url, logged_in, messages_of
from .test_live_view import live_url

pytestmark = pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit


def failed_quote(owner=None) -> WorkflowInstance:
    Note.objects.create(text="rate 0")  # stale: the step "price" fails on it
    instance = services.create("durable-quote", start=True, user=owner)
    instance.refresh_from_db()
    assert instance.status == "failed"
    return instance


def journal_of(page: str, operation: str) -> str:
    found = re.search(rf'<tr class="dwf-journal-row" data-journal-of="{operation}">(.*?)'
                      r"</details>\s*</td></tr>", page, re.S)
    assert found, f"no journal of {operation} on the page"
    return found.group(1)


def entries(journal: str) -> list[dict[str, str]]:
    """Each entry's cells as text, and its button's confirmation."""
    found = []
    for row in re.findall(r'<tr class="dwf-journal-entry".*?</tr>', journal, re.S):
        cells = [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", cell))).strip()
                 for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        confirm = re.search(r'data-confirm="([^"]*)"', row)
        found.append({"position": cells[0], "name": cells[1], "kind": cells[2],
                      "tries": cells[3], "started": cells[4], "finished": cells[5],
                      "result": cells[6], "button": cells[7],
                      "confirm": html.unescape(confirm.group(1)) if confirm else ""})
    return found


def test_the_page_shows_each_entry_with_its_times_tries_and_result(root_client):
    instance = failed_quote()

    page = root_client.get(instance_url(instance)).content.decode()

    shown = entries(journal_of(page, "quote"))
    assert [(e["position"], e["name"], e["kind"], e["tries"]) for e in shown] == [
        ("0", "load", "step", "1"), ("1", "rate", "step", "1")]
    assert shown[0]["result"].startswith("[1, 2]")  # a list unfolds into its JSON
    assert shown[1]["result"] == "0"
    for entry in shown:  # to the second, as the page's other times
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", entry["finished"])
        assert entry["started"] <= entry["finished"]


def test_a_failed_instance_offers_retry_from_here_on_each_entry_to_confirm(root_client):
    instance = failed_quote()

    shown = entries(journal_of(root_client.get(instance_url(instance)).content.decode(),
                               "quote"))

    assert [e["button"] for e in shown] == ["Retry from here", "Retry from here"]
    assert shown[1]["confirm"] == (
        'Retry from entry 1 of the journal of operation "quote": its entry from there is '
        "deleted, and the code runs those steps again. Retry?")


def test_retry_from_here_posts_the_entry_and_the_code_runs_it_again(root_client):
    instance = failed_quote()
    Note.objects.create(text="rate 5")

    response = root_client.post(instance_url(instance), {
        "_command": "retry", "revision": instance.revision,
        "retry-operation": "quote", "retry-from_step": "1"})

    assert response.status_code == 302
    assert messages_of(response) == [
        'Retry: done; the instance is now running at step "done".']
    instance = WorkflowInstance.objects.get(pk=instance.pk)
    assert list(JournalEntry.objects.filter(instance=instance).order_by("position")
                .values_list("name", "value")) == [("load", [1, 2]), ("rate", 5),
                                                   ("price", 15)]
    page = root_client.get(instance_url(instance)).content.decode()
    assert "from entry 1 of the journal of quote" in html.unescape(page)  # the event log


def test_the_command_bar_s_retry_asks_for_no_entry(root_client):
    instance = failed_quote()

    page = root_client.get(instance_url(instance)).content.decode()
    bar = re.search(r'<form method="post" id="dwf-commands".*?</form>', page, re.S).group(0)

    assert 'value="retry"' in bar
    assert "retry-from_step" not in bar and "retry-operation" not in bar


def test_a_viewer_sees_the_journal_and_no_button(viewer):
    instance = failed_quote()

    shown = entries(journal_of(logged_in(viewer).get(instance_url(instance)).content
                               .decode(), "quote"))

    assert [e["name"] for e in shown] == ["load", "rate"]
    assert [e["button"] for e in shown] == ["", ""]


def test_a_suspended_operation_says_what_its_code_waits_for(root_client):
    instance = services.create("durable-billing", state={"lines": [1], "intent": "pi_4"},
                               start=True)

    page = root_client.get(instance_url(instance)).content.decode()
    journal = journal_of(page, "bill")

    assert [e["kind"] for e in entries(journal)] == ["step", "sleep"]
    waits = re.search(r'<tr class="dwf-journal-waiting">(.*?)</tr>', journal, re.S).group(1)
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", waits))).strip()
    assert text.startswith("2 Waiting for the signal paid")  # the entry that waits
    assert "correlation pi_4" in text
    assert "The durable code of operation bill waits, at entry 2" in html.unescape(
        re.sub(r"<[^>]+>", "", page))


def test_a_task_asked_by_the_code_links_to_its_task_page(root_client):
    bots = Group.objects.create(name="payment-bots")
    bot = UserFactory()
    bot.groups.add(bots)
    instance = services.create("durable-billing", state={"lines": [1], "intent": "pi_5"},
                               start=True)
    services.signal("durable-billing", "paid", {"amount": 3}, correlation="pi_5", user=bot)
    task = WorkflowTask.objects.get(instance=instance, status="open")

    journal = journal_of(root_client.get(instance_url(instance)).content.decode(), "bill")

    waits = re.search(r'<tr class="dwf-journal-waiting">(.*?)</tr>', journal, re.S).group(1)
    assert f'/admin/django_workflows/workflowtask/{task.pk}/change/' in waits
    assert "Review the invoice" in waits


def test_the_live_view_sends_the_journal_of_code_that_runs(root_client, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,  # no worker comes by itself
                                 "RUNNER": "tests.admin.runners.HoldingRunner"}
    instance = services.create("durable-quote", start=True)
    operation = WorkflowInstance.objects.get(pk=instance.pk).snap.operation("quote")
    services.claim_attempt(operation.token, worker="w-1")
    revision = WorkflowInstance.objects.get(pk=instance.pk).revision
    assert root_client.get(live_url(instance.pk), {"revision": revision}).json().get(
        "journals", {}) == {}  # nothing recorded yet

    DatabaseJournal(instance.pk, "quote", operation.token).record(  # as the worker writes
        operation.journal, Entry(0, "load", "step", [1, 2], 1, 1.0e9, 1.0e9 + 1))
    data = root_client.get(live_url(instance.pk), {"revision": revision}).json()

    assert list(data["journals"]) == ["quote"]
    assert 'data-name="load"' in data["journals"]["quote"]
    assert "Retry from here" not in data["journals"]["quote"]

