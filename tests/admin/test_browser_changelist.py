"""The instances changelist and the admin home in a real browser: names people use, and what
a missing sweep leaves stuck."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from django_workflows import services
from django_workflows.models import Attempt, SweepLease
from django_workflows.runners.sweeper_thread import Sweeper
from django_workflows.services.sweep import LEASE

from .conftest import changelist_url, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def listed(page) -> list[str]:
    """The full ids of the rows the changelist shows, in order."""
    return page.eval_on_selector_all("#result_list tbody .dwf-id",
                                     "ids => ids.map(i => i.getAttribute('title'))")


def search(page, term: str) -> None:
    page.fill("#searchbar", term)
    page.press("#searchbar", "Enter")
    page.wait_for_load_state()


def test_the_reference_is_a_column_and_the_search_finds_an_order_by_it(page):
    orders = [services.create("wizard", reference=f"ORDER-2024-{n}") for n in (17, 18)]
    services.create("wizard", reference="REFUND-9")
    page.goto(changelist_url())
    references = page.eval_on_selector_all("#result_list tbody td.field-reference",
                                           "cells => cells.map(c => c.textContent.trim())")
    assert sorted(references) == ["ORDER-2024-17", "ORDER-2024-18", "REFUND-9"]
    assert page.inner_text("#result_list thead th.column-reference").strip() == "REFERENCE"

    search(page, "ORDER-2024")

    assert sorted(listed(page)) == sorted(str(order.pk) for order in orders)
    search(page, "ORDER-2024-18")
    assert listed(page) == [str(orders[1].pk)]
    screenshot(page, "changelist-searched-by-reference")


def test_the_short_id_the_list_shows_finds_that_instance(page):
    instances = [services.create("wizard") for _ in range(3)]
    page.goto(changelist_url())
    shown = page.inner_text(f'#result_list .dwf-id[title="{instances[1].pk}"]')
    assert shown == f"{str(instances[1].pk)[:8]}…"

    search(page, shown.rstrip("…"))

    assert listed(page) == [str(instances[1].pk)]


def test_the_short_id_pasted_with_its_ellipsis_finds_that_instance(page):
    instances = [services.create("wizard") for _ in range(3)]
    page.goto(changelist_url())
    shown = page.inner_text(f'#result_list .dwf-id[title="{instances[1].pk}"]')
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.evaluate("text => navigator.clipboard.writeText(text)", f" {shown} ")

    page.click("#searchbar")
    page.keyboard.press("Control+V")  # pasted as copied from the row: "cdd56d7d…"
    assert page.input_value("#searchbar") == f" {shown} "
    page.press("#searchbar", "Enter")
    page.wait_for_load_state()

    assert listed(page) == [str(instances[1].pk)]


def overdue_work_and_no_sweep_lately() -> None:
    """A queued attempt no worker claimed for minutes, and the last sweep long ago."""
    instance = services.create("admin-slow")
    Attempt.objects.create(token="waiting", instance=instance, kind="operation", target="count",
                           enqueued_at=timezone.now() - timedelta(minutes=5))
    SweepLease.objects.update_or_create(
        name=LEASE, defaults={"swept_at": timezone.now() - timedelta(minutes=10)})


def test_the_admin_says_so_when_no_sweep_ran_and_work_is_overdue(page):
    overdue_work_and_no_sweep_lately()

    page.goto("/admin/")

    banner = page.inner_text("#dwf-sweep-banner")
    assert "No sweep has run since" in banner and "1 deadlines or queued attempts" in banner
    assert "manage.py qcluster" in banner
    page.goto(changelist_url())
    assert "No sweep has run since" in page.inner_text("ul.messagelist")
    screenshot(page, "sweep-banner", full_page=False)


def test_the_admin_says_nothing_once_a_sweep_ran(page):
    overdue_work_and_no_sweep_lately()
    Sweeper(holder="test").turn()

    page.goto("/admin/")

    assert page.locator("#dwf-sweep-banner").count() == 0
    page.goto(changelist_url())
    assert page.locator("ul.messagelist").count() == 0
