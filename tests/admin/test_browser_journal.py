"""An operation's journal on the instance page, in a real browser: the steps a failed quote
recorded, a result unfolded into its JSON, and "Retry from here", confirmed, running the
stale step and the ones after it again."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from django_workflows import services
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.testapp.models import Note

from .conftest import instance_url, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ENTRIES = 'tr.dwf-journal-row[data-journal-of="quote"] tr.dwf-journal-entry'


def failed_quote() -> WorkflowInstance:
    """A quote that failed on its stale rate, made (and run, by the immediate runner) in a
    thread of its own: in this one Playwright's event loop runs, and durable code run where
    a loop runs takes itself for async code (engine/attempts.py asks ``in_event_loop``)."""
    made: list[WorkflowInstance] = []

    def make() -> None:
        try:
            Note.objects.create(text="rate 0")  # stale: the step "price" fails on it
            made.append(services.create("durable-quote", start=True))
        finally:
            connection.close()

    worker = threading.Thread(target=make)
    worker.start()
    worker.join(timeout=30)
    instance = WorkflowInstance.objects.get(pk=made[0].pk)
    assert instance.status == "failed"
    return instance


def shown(page) -> list[list[str]]:
    """Each entry as the page shows it: position, step, kind, tries, result."""
    return page.eval_on_selector_all(ENTRIES, """rows => rows.map(row => {
        const cells = Array.from(row.cells).map(cell => cell.innerText.trim());
        return [cells[0], cells[1], cells[2], cells[3], cells[6].split("\\n")[0]];
    })""")


def test_an_operator_reads_the_journal_and_retries_from_the_stale_step(page):
    instance = failed_quote()
    page.goto(instance_url(instance))

    assert page.inner_text("#dwf-status") == "Failed"
    assert shown(page) == [["0", "load", "step", "1", "[1, 2]"], ["1", "rate", "step", "1", "0"]]
    load = page.locator(f"{ENTRIES}[data-name=load] td.dwf-journal-value details")
    load.locator("summary").click()  # a list unfolds into its JSON
    assert load.locator("pre").inner_text().split() == ["[", "1,", "2", "]"]
    screenshot(page, "journal-of-a-failed-quote")

    Note.objects.create(text="rate 5")  # the rate is mended; the journal holds the stale one
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click(f"{ENTRIES}[data-name=rate] button.dwf-journal-command")
    page.wait_for_selector("ul.messagelist")

    assert asked == ['Retry from entry 1 of the journal of operation "quote": its entry from '
                     "there is deleted, and the code runs those steps again. Retry?"]
    assert 'Retry: done; the instance is now running at step "done".' in page.inner_text(
        "ul.messagelist")
    page.click("#dwf-journal-quote > summary")  # folded once its operation succeeded
    assert shown(page) == [["0", "load", "step", "1", "[1, 2]"], ["1", "rate", "step", "1", "5"],
                           ["2", "price", "step", "1", "15"]]
    assert page.locator(f"{ENTRIES} button.dwf-journal-command").count() == 0  # not failed
    screenshot(page, "journal-after-retry-from-a-step")
    instance = WorkflowInstance.objects.get(pk=instance.pk)
    assert instance.current_step == "done"
    assert list(Note.objects.filter(text="loaded").values_list("text", flat=True)) == [
        "loaded"]  # the step before the entry ran once
    assert JournalEntry.objects.filter(instance=instance).count() == 3


def test_a_dismissed_confirmation_retries_nothing(page):
    instance = failed_quote()
    page.goto(instance_url(instance))

    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click(f"{ENTRIES}[data-name=load] button.dwf-journal-command")

    assert shown(page)[0][1] == "load"
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "failed"
    assert JournalEntry.objects.filter(instance=instance).count() == 2
