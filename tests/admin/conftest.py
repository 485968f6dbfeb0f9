"""Users with each kind of access, logged-in clients, a browser, and helpers for the admin pages."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connections
from django.test import Client
from django.urls import reverse

from django_workflows import registry
from tests.factories import UserFactory

from . import workflows

CHANGELIST = "admin:django_workflows_workflowinstance_changelist"


@pytest.fixture(autouse=True)
def admin_workflows():
    """The admin tests' workflows, registered for each test only (other suites never see them)."""
    added = [w for w in workflows.ALL if registry.find(w.id) is None]
    for workflow in added:
        registry.register(workflow, origin="tests.admin.workflows")
    yield
    for workflow in added:
        registry.unregister(workflow.id)


def with_permissions(username: str, *codenames: str):
    user = UserFactory(username=username, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="django_workflows", codename__in=codenames))
    return user


@pytest.fixture
def superuser(db):
    return UserFactory(username="root", superuser=True)


@pytest.fixture
def operator(db):
    """Staff who may view and change workflow instances (and add them)."""
    return with_permissions("operator", "view_workflowinstance", "change_workflowinstance",
                            "add_workflowinstance", "view_workflowevent")


@pytest.fixture
def viewer(db):
    """Staff who may only look."""
    return with_permissions("viewer", "view_workflowinstance", "view_workflowevent")


@pytest.fixture
def clerk(db):
    """Staff with the change permission whom ``admin-guarded``'s own rule refuses."""
    return with_permissions("clerk", "view_workflowinstance", "change_workflowinstance",
                            "add_workflowinstance")


@pytest.fixture
def outsider(db):
    """Staff without any workflow permission."""
    return UserFactory(username="outsider", is_staff=True)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root_client(superuser):
    return logged_in(superuser)


def instance_url(instance) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])


def changelist_url() -> str:
    return reverse(CHANGELIST)


def messages_of(response) -> list[str]:
    """The messages a (redirecting) response left for the next page."""
    return [str(message) for message in get_messages(response.wsgi_request)]


def shown_messages(response) -> list[tuple[str, str]]:
    """(level, text) of the messages a rendered admin page shows."""
    found = re.search(r'<ul class="messagelist">(.*?)</ul>', response.content.decode(), re.S)
    if not found:
        return []
    return [(level, html.unescape(text).strip())
            for level, text in re.findall(r'<li class="(\w+)">(.*?)</li>', found.group(1), re.S)]


# -- a real browser: Debian's Chromium driven by Playwright, against a live server -------------

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


@contextmanager
def admin_page(browser, live_server, username: str) -> Iterator[Any]:
    """A page of the admin, signed in as ``username`` (password ``password``)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", "password")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def page(browser, live_server, request):
    UserFactory(username="root", superuser=True)
    with admin_page(browser, live_server, "root") as page:
        yield page


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
