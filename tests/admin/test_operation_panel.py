"""The operations panel says what runs now: the attempt that runs, not the one before it;
progress with its unit; a finished operation without a count that says nothing.

``admin-charge`` (3 retries, no delay, progress in seconds) is driven by hand: a worker
claims each attempt and reports how it ended, as the D-1004 payment went.
"""

from __future__ import annotations

import re

import pytest

from django_workflows import services
from django_workflows.engine import AttemptOutcome, ErrorInfo, Progress
from django_workflows.models import WorkflowInstance
from django_workflows.runners.worker import DatabaseSink

from .conftest import instance_url
from .test_live_view import live_url

pytestmark = pytest.mark.django_db

UNAVAILABLE = ErrorInfo("ProviderError", "Payment provider unavailable (503)")


def token_of(instance) -> str:
    return WorkflowInstance.objects.get(pk=instance.pk).operations[0]["token"]


def failed_once():
    """The charge's first attempt failed with a 503; the second is queued."""
    instance = services.create("admin-charge", start=True)
    first = token_of(instance)
    services.claim_attempt(first, worker="w-1")
    services.finish_attempt(first, AttemptOutcome(ok=False, error=UNAVAILABLE))
    return instance


def row_of(client, instance) -> dict[str, str]:
    """What the panel's row says: its badge, attempt, progress and error, as text."""
    content = client.get(instance_url(instance)).content.decode()
    row = re.search(r'<tr class="dwf-operation" data-operation="charge-card".*?</tr>', content,
                    re.S).group(0)

    def text(pattern: str) -> str:
        found = re.search(pattern, row, re.S)
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(1))).strip()

    return {"badge": text(r'(<span class="dwf-badge dwf-op-status[^"]*"[^>]*>.*?</span>)'),
            "badge_class": re.search(r'dwf-op-status (dwf-status-[\w-]+)', row).group(1),
            "attempt": text(r'<td class="dwf-op-attempt">(.*?)</td>'),
            "progress": text(r'<span class="dwf-progress-text">(.*?)</span>'),
            "error": text(r'<td class="dwf-op-error">(.*?)</td>')}


def test_a_second_attempt_that_runs_is_running_with_no_error_of_the_first(root_client):
    instance = failed_once()
    services.claim_attempt(token_of(instance), worker="w-2")  # the instance learns it later

    shown = row_of(root_client, instance)
    [live] = root_client.get(live_url(instance.pk)).json()["operations"]

    assert (shown["badge"], shown["badge_class"]) == ("running", "dwf-status-running")
    assert shown["attempt"] == "2 of 4"
    assert shown["error"] == ""
    assert (live["status_label"], live["status_class"], live["error"]) == (
        "running", "running", "")


def test_a_retry_not_yet_taken_says_so_and_why_the_attempt_before_failed(root_client):
    instance = failed_once()

    shown = row_of(root_client, instance)

    assert shown["badge"] == "queued to retry"
    assert shown["attempt"] == "2 of 4"
    assert shown["error"] == ("attempt 1 failed: ProviderError: Payment provider unavailable "
                              "(503)")


def test_progress_is_shown_in_the_operations_unit(root_client):
    instance = services.create("admin-charge", start=True)
    token = token_of(instance)
    services.claim_attempt(token, worker="w-1")
    sink = DatabaseSink(token, threaded=False)
    sink.report(status=None, progress=Progress(1.5, 4, "The bank checks the payment"),
                logs=[])
    sink.close()

    assert row_of(root_client, instance)["progress"] == "1.5 / 4 s · The bank checks the payment"
    [live] = root_client.get(live_url(instance.pk)).json()["operations"]
    assert live["progress_text"] == "1.5 / 4 s · The bank checks the payment"


def test_a_succeeded_charge_says_its_last_message_without_a_count_of_nothing(root_client):
    instance = services.create("admin-charge", start=True)
    token = token_of(instance)
    services.claim_attempt(token, worker="w-1")
    services.finish_attempt(token, AttemptOutcome(ok=True, value={"charge": "ch_1"},
                                                  progress=Progress(0, None, "Confirmed")))

    shown = row_of(root_client, instance)

    assert shown["badge"] == "succeeded"
    assert shown["progress"] == "Confirmed"
