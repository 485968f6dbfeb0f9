"""A manager opens a claim's task in a real browser and sees what they decide, above the
form: the amount, the currency, the description, the receipt as a link."""

from __future__ import annotations

import pytest
from django.urls import reverse

from django_workflows.models import WorkflowTask
from tests.factories import UserFactory
from tests.task_shows import claim_at_approval, onboarding_of, shown_workflows  # noqa: F401

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("shown_workflows")]


def test_the_task_page_shows_the_claim_above_the_form(page):
    instance = claim_at_approval(UserFactory(username="ann"))
    task = WorkflowTask.objects.get(instance=instance, status="open")

    page.goto(reverse("admin:django_workflows_workflowtask_change", args=[task.pk]))

    rows = page.eval_on_selector_all(
        "#dwf-task-shows tr", "rows => rows.map(r => [r.querySelector('th').innerText, "
                              "r.querySelector('td').innerText])")
    assert rows == [["Amount spent", "120.5"], ["Currency", "EUR"],
                    ["Description", "Train to Lyon <script>x()</script>"],
                    ["Receipt", "https://files.example.com/receipts/1.pdf"],
                    ["Iban", "missing: the instance's state has no such value"]]
    receipt = page.locator("#dwf-task-shows a")
    assert receipt.get_attribute("href") == "https://files.example.com/receipts/1.pdf"
    shows, form = (page.locator(selector).bounding_box()
                   for selector in ("#dwf-task-shows", "#dwf-task-form"))
    assert shows is not None and form is not None and shows["y"] < form["y"]
    screenshot(page, "task-shows-claim")


def test_the_inbox_tells_two_reviews_apart_and_its_search_finds_alices(page):
    onboarding_of(UserFactory(username="alice"), reference="O-ALICE")
    bobs = onboarding_of(UserFactory(username="bob"))

    page.goto(reverse("admin:django_workflows_workflowtask_changelist"))
    read = ("rows => rows.map(r => [r.querySelector('.field-task_title').innerText, "
            "r.querySelector('.field-owner').innerText, "
            "r.querySelector('.field-root_link').innerText])")
    assert sorted(page.eval_on_selector_all("#result_list tbody tr", read)) == [
        ["Review a document", "alice", "An onboarding O-ALICE"],
        ["Review a document", "bob", f"An onboarding {bobs.name}"]]
    screenshot(page, "task-inbox-roots")

    page.fill("#searchbar", "alice")
    page.press("#searchbar", "Enter")
    page.wait_for_url("**q=alice**")

    assert page.eval_on_selector_all("#result_list tbody tr", read) == [
        ["Review a document", "alice", "An onboarding O-ALICE"]]
