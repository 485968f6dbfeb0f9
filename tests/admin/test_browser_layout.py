"""The admin's pages fit the screen: a wide list beside the sidebars, the instance page on a
phone. Measured in a real browser, in CSS pixels."""

from __future__ import annotations

import pytest
from django.urls import reverse

from django_workflows import services
from tests.factories import UserFactory

from .conftest import changelist_url, instance_url, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_changelist_shows_every_column_whole_at_1280px(page):
    owner = UserFactory(username="margaret.hamilton")
    for n in range(3):
        services.create("admin-payment", owner=owner, reference=f"ORDER-2024-{n:05d}")
    services.create("back-office", reference="AREFERENCEWITHOUTABREAKINIT0001")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.goto(changelist_url())

    results = page.locator("#changelist .results")
    box, updated = results.bounding_box(), page.locator("th.column-updated_at").bounding_box()
    assert updated["x"] + updated["width"] <= box["x"] + box["width"] + 0.5 <= 1280
    assert results.evaluate("node => node.scrollWidth <= node.clientWidth")
    screenshot(page, "changelist-at-1280px", full_page=False)


def test_the_instance_page_fits_a_390px_screen_its_tables_scroll_in_their_boxes(page):
    instance = services.create("back-office", start=True)  # events with data, branches
    page.set_viewport_size({"width": 390, "height": 844})

    page.goto(instance_url(instance))

    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    for table in page.locator(".dwf-instance table.dwf-table").all():
        box = table.evaluate("""table => {
            const holder = table.parentElement, rect = holder.getBoundingClientRect();
            return {fits: table.scrollWidth <= holder.clientWidth,
                    scrolls: getComputedStyle(holder).overflowX === "auto",
                    left: rect.left, right: rect.right};
        }""")
        assert box["fits"] or box["scrolls"]
        assert box["left"] >= 0 and box["right"] <= 390
    events = page.locator("#dwf-events .dwf-scroll")
    events.evaluate("holder => { holder.scrollLeft = holder.scrollWidth; }")  # it scrolls
    assert events.evaluate("holder => holder.scrollLeft") > 0
    screenshot(page, "instance-page-at-390px")


def test_diagram_text_stays_inside_its_boxes(page):
    instance = services.create("admin-review")

    page.goto(instance_url(instance))

    texts = page.eval_on_selector_all("#dwf-diagram g.dwf-step", """steps => steps.flatMap(
        step => Array.from(step.querySelectorAll("text")).map(text => ({
            step: step.dataset.step, words: text.textContent,
            room: step.querySelector("rect").getBBox().width - 8,
            width: text.getComputedTextLength()})))""")
    title, *details = [t["words"] for t in texts if t["step"] == "review"]
    assert title == "Manual review" and len(details) > 1  # wrapped, nothing cut
    assert " · ".join(details) == "auto · conditional · 2 operations · timeout 600s"
    assert [t for t in texts if t["width"] > t["room"]] == []
    labels = page.eval_on_selector_all("#dwf-diagram text.dwf-edge-label",
                                       "labels => labels.map(l => l.textContent)")
    assert labels == ["is_rejected", "approved by an operator"]
    screenshot(page, "diagram-labels", full_page=False)


@pytest.mark.parametrize("width", [1024, 1400])
def test_the_definitions_page_keeps_the_sidebar_beside_its_table_which_scrolls_in_its_box(
        page, width):
    page.set_viewport_size({"width": width, "height": 900})

    page.goto(reverse("admin:django_workflows_workflowinstance_definitions"))

    sidebar, table = page.locator("#nav-sidebar").bounding_box(), \
        page.locator("#dwf-definitions").bounding_box()
    assert sidebar["x"] + sidebar["width"] <= table["x"]  # beside it, not below
    assert sidebar["y"] < table["y"] < sidebar["y"] + 100
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    holder = page.locator("#dwf-definitions").evaluate("""table => {
        const box = table.parentElement.getBoundingClientRect();
        return {right: box.right, scrolls: getComputedStyle(table.parentElement).overflowX};
    }""")
    assert holder["right"] <= width and holder["scrolls"] == "auto"
    screenshot(page, f"definitions-at-{width}px", full_page=False)
