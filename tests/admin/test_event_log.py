"""The instance page's event log: each event a sentence with its data, its raw JSON behind a
toggle; every event type the engine emits has a sentence of its own."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from django_workflows import services
from django_workflows.admin.events import SENTENCES, AttemptTimes, Facts, sentence, told
from django_workflows.engine import EVENT_TYPES
from django_workflows.graph.timeline import Titles
from django_workflows.models import WorkflowInstance

from .conftest import instance_url

NOW = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)


def event(type_: str, step: str = "", error=None, actor: str | None = None, **data):
    return SimpleNamespace(type=type_, step=step, data=data, error=error, created_at=NOW,
                           actor_name=actor)


@pytest.mark.parametrize("type_", EVENT_TYPES)
def test_every_event_type_the_engine_emits_has_a_sentence_of_its_own(type_):
    assert type_ in SENTENCES, f"{type_!r} has no sentence in admin/events.py SENTENCES"
    assert sentence(event(type_, "review"))  # even an old row without the data it names


def test_a_type_without_a_sentence_still_reads_as_words():
    assert sentence(event("coffee-break", "review")) == "Coffee break at “review”"


def test_a_failed_attempt_says_which_how_long_it_ran_and_why():
    facts = Facts(attempts={"charge-card": [
        AttemptTimes(1, NOW - timedelta(seconds=9), NOW - timedelta(seconds=8),
                     NOW - timedelta(seconds=7)),
        AttemptTimes(2, NOW - timedelta(seconds=4), NOW - timedelta(seconds=3.1), NOW)]})

    said = sentence(event("operation-retrying", "charge", "Payment provider unavailable (503)",
                          operation="charge-card", attempt=3, delay=4), facts)

    assert said == ("Attempt 2 of charge-card failed after 3.1 s: Payment provider unavailable "
                    "(503); attempt 3 in 4.0 s")


def test_the_last_failed_attempt_says_no_attempts_are_left():
    facts = Facts(attempts={"charge-card": [AttemptTimes(4, NOW - timedelta(seconds=2),
                                                         NOW - timedelta(seconds=2), NOW)]})

    said = sentence(event("operation-failed", "charge", "Card declined",
                          operation="charge-card"), facts)

    assert said == "Attempt 4 of charge-card failed after 2.0 s: Card declined; no attempts left"


def test_steps_are_named_by_their_titles_and_tasks_by_who_acted():
    facts = Facts(Titles(steps={"approve": "Approve the claim"},
                         tasks={"approve": "Decide on the claim"}))

    assert sentence(event("step-enter", "approve"), facts) == \
        "Entered “Approve the claim” (approve)"
    assert sentence(event("task-complete", "approve", actor="ann", task="t",
                          input={"decision": "approved", "comment": "ok"}), facts) == \
        "ann decided the task “Decide on the claim”: decision: approved, comment: ok"
    assert sentence(event("task-open", "approve", task="t",
                          candidates=["group:managers", "perm:shop.pay"]), facts) == \
        "The task “Decide on the claim” opened for the group managers, whoever has shop.pay"
    assert sentence(event("validate", "approve", errors=["Amount is required"]), facts) == \
        "“Approve the claim” (approve) was checked: 1 thing to fix: Amount is required"


# -- on the instance page ------------------------------------------------------------------


def rows_of(content: str) -> list[tuple[str, str, str]]:
    """(type, sentence, raw JSON) of each row of the page's event log, newest first."""
    found = re.findall(
        r'<tr class="dwf-event dwf-event-([\w-]+)">.*?<span class="dwf-sentence[^"]*">(.*?)'
        r'</span><details class="dwf-event-raw"><summary>raw JSON</summary>'
        r'<pre class="dwf-data">(.*?)</pre>', content, re.S)
    return [(kind, html.unescape(said), html.unescape(raw)) for kind, said, raw in found]


@pytest.mark.django_db
def test_the_page_says_each_event_in_words_with_its_raw_json_behind_a_toggle(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("admin-fragile", start=True)  # the download fails

    rows = rows_of(root_client.get(instance_url(instance)).content.decode())

    said = {kind: text for kind, text, _ in rows}
    assert re.fullmatch(r"Attempt 1 of download failed after \d+\.\d s: feed unavailable "
                        r"\(503\); no attempts left", said["operation-failed"])
    assert said["error"] == "Failed at “Fetch the feed” (fetch): feed unavailable (503)"
    assert said["step-enter"] == "Entered “Fetch the feed” (fetch)"
    assert re.fullmatch(r"Attempt 1 of download started on .+", said["operation-started"])
    raw = {kind: json.loads(text) for kind, _, text in rows}
    assert raw["operation-failed"] == {"data": {"operation": "download"},
                                       "error": "feed unavailable (503)"}


@pytest.mark.django_db
def test_the_page_reads_the_attempts_times_in_one_query_for_a_page_of_events(
        root_client, django_capture_on_commit_callbacks, django_assert_max_num_queries):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("admin-fragile", start=True)
    with django_capture_on_commit_callbacks(execute=True):
        services.retry(instance)
    events = list(WorkflowInstance.objects.get(pk=instance.pk).events.select_related("actor"))

    with django_assert_max_num_queries(1):
        told(events, "admin-fragile", instance.pk)
