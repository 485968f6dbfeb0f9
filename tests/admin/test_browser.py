"""The admin in a real browser: Debian's Chromium driven by Playwright, against a live server.

The fixtures (``browser``, ``page``) and helpers (``screenshot``, ``wait_until``) are in
``conftest.py``. Screenshots go to ``artifacts/screenshots/``. A browser that cannot
start fails these tests; they never skip.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from django_workflows import services
from django_workflows.models import WorkflowInstance
from django_workflows.reading.queries import live_operations

from .conftest import changelist_url, instance_url, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

def test_retry_of_a_failed_instance_from_its_page_runs_it_again(page):
    instance = services.create("admin-fragile", start=True)  # the first download fails
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "failed"

    page.goto(instance_url(instance))
    assert page.inner_text("#dwf-status") == "Failed"
    fetch = page.locator('#dwf-diagram svg g.dwf-step[data-step="fetch"]')
    assert fetch.get_attribute("data-mark") == "failed"
    assert "feed unavailable (503)" in page.inner_text("#dwf-errors")
    screenshot(page, "failed-instance")

    page.click("button.dwf-command-retry")
    page.wait_for_selector("ul.messagelist")

    assert page.inner_text("#dwf-status") == "Running"
    assert "Retry: done" in page.inner_text("ul.messagelist")
    assert page.locator('#dwf-diagram g.dwf-step[data-step="fetch"]').get_attribute(
        "data-mark") == "completed"
    assert page.locator('#dwf-diagram g.dwf-step[data-step="review"]').get_attribute(
        "data-mark") == "current"
    screenshot(page, "failed-instance-after-retry")
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "review"


def test_progress_bar_of_a_running_operation_moves(page):
    instance = services.create("admin-slow", state={"ticks": 24, "tick": 0.25})

    def work() -> None:  # the immediate runner runs the operation in this thread
        try:
            services.start(instance)
        finally:
            connection.close()

    worker = threading.Thread(target=work, name="admin-slow-worker")
    worker.start()
    try:
        # claimed and running: the claim is on the attempt's row, as the page shows it
        wait_until(lambda: [live.operation.status for live in live_operations(
            WorkflowInstance.objects.get(pk=instance.pk))] == ["running"])
        page.goto(instance_url(instance))
        bar = page.locator('tr.dwf-operation[data-operation="count"] progress.dwf-progress')
        first = bar.evaluate("bar => bar.position >= 0 ? bar.value : 0")
        screenshot(page, "running-instance-progress-start")

        page.wait_for_function(
            f"""() => {{
                const bar = document.querySelector(
                    'tr.dwf-operation[data-operation="count"] progress.dwf-progress');
                return bar.hasAttribute('value') && bar.value > {first} + 10;
            }}""", timeout=15_000)

        later = bar.evaluate("bar => bar.value")
        assert later > first
        assert "tick" in page.inner_text('tr.dwf-operation[data-operation="count"] .dwf-logs')
        screenshot(page, "running-instance-progress-moved")
    finally:
        worker.join(timeout=30)
    assert not worker.is_alive()


def test_state_edit_with_a_bad_value_shows_the_validation_error(page):
    instance = services.create("wizard", start=True)

    page.goto(instance_url(instance))
    page.click("details.dwf-state-edit summary")
    page.fill("#dwf-state-form textarea", '{"email": "ann@example.com", "plan": "gold"}')
    page.click("#dwf-state-form input[name=_state]")
    page.wait_for_selector("#dwf-state-errors .errorlist")

    assert "plan: 'gold' is not one of" in page.inner_text("#dwf-state-errors")
    assert '"gold"' in page.input_value("#dwf-state-form textarea")  # what was typed is kept
    screenshot(page, "state-validation-error")
    assert WorkflowInstance.objects.get(pk=instance.pk).state == {"email": "", "plan": None}


def test_state_edit_over_the_upload_limit_shows_the_limit_not_a_bare_400(page, settings):
    instance = services.create("wizard", start=True)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 5000  # the live server runs in this process

    page.goto(instance_url(instance))
    page.click("details.dwf-state-edit summary")
    page.fill("#dwf-state-form textarea", '{"email": "' + "a" * 10_000 + '", "plan": null}')
    page.click("#dwf-state-form input[name=_state]")
    page.wait_for_selector("#dwf-state-errors .errorlist")

    assert "more than the 5000 bytes" in page.inner_text("#dwf-state-errors")
    screenshot(page, "state-over-the-upload-limit")
    assert WorkflowInstance.objects.get(pk=instance.pk).state == {"email": "", "plan": None}


def test_changelist_and_definitions_pages_render(page):
    services.create("admin-fragile", start=True)
    services.create("wizard", start=True)

    page.goto(changelist_url())
    assert page.locator("#result_list tbody tr").count() == 2
    assert page.locator("#result_list .dwf-badge.dwf-status-failed").count() == 1
    screenshot(page, "changelist")

    page.click("text=Definitions")
    page.wait_for_selector("#dwf-definitions")
    assert page.locator("section.dwf-definition svg.dwf-diagram").count() >= 4
    screenshot(page, "definitions", full_page=False)  # every registered workflow: a long page
