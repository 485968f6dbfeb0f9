"""The admin in a real browser: Debian's Chromium driven by Playwright, against a live server.

Screenshots go to ``artifacts/screenshots/``. A browser that cannot start fails
these tests; they never skip.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections

from django_workflows import services
from django_workflows.models import WorkflowInstance
from django_workflows.queries import live_operations
from tests.factories import UserFactory

from .conftest import changelist_url, instance_url

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls
    # are still plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                             headless=True)
        try:
            yield browser
        finally:
            browser.close()
            # With Playwright's loop running, the ORM keeps this test's connection in a
            # context of its own: close it, or the test database cannot be dropped.
            connections.close_all()


@pytest.fixture
def page(browser, live_server, request):
    UserFactory(username="root", superuser=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "password")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")
    yield page
    context.close()


def screenshot(page, name: str, *, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def wait_until(check, *, timeout: float = 15.0, every: float = 0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"Still not true after {timeout}s: {check}")


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
