"""The event log in Chromium: sentences to read, the raw JSON one click away."""

from __future__ import annotations

import json

import pytest

from django_workflows import services

from .conftest import instance_url, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_event_log_reads_as_sentences_and_shows_the_raw_json_on_request(page):
    instance = services.create("admin-fragile", start=True)  # the download fails once
    services.retry(instance)  # and succeeds

    page.goto(instance_url(instance))

    failed = page.locator("#dwf-events tr.dwf-event-operation-failed")
    said = failed.locator(".dwf-sentence").inner_text()
    assert said.startswith("Attempt 1 of download failed after ")
    assert said.endswith(": feed unavailable (503); no attempts left")
    assert page.locator("#dwf-events tr.dwf-event-retry .dwf-sentence").inner_text() == \
        "Retried “Fetch the feed” (fetch): its unfinished work runs again"
    raw = failed.locator("pre.dwf-data")
    assert not raw.is_visible()

    failed.locator("summary").click()

    assert raw.is_visible()
    assert json.loads(raw.inner_text()) == {"data": {"operation": "download"},
                                            "error": "feed unavailable (503)"}
    screenshot(page, "event-log-raw-json")
