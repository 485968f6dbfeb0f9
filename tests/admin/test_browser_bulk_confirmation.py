"""Bulk commands that undo work, in a real browser (Chromium): the list's action shows what
it will do to each selected instance first; "No, take me back" changes nothing, and
"Yes, I'm sure" gives the command to those it applies to."""

from __future__ import annotations

import pytest

from django_workflows.models import WorkflowInstance
from tests.factories import WorkflowInstanceFactory
from tests.testapp.models import Note

from .conftest import changelist_url, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def statuses(*instances) -> list[str]:
    return [WorkflowInstance.objects.get(pk=i.pk).status for i in instances]


def choose_on_the_list(page, action: str, *instances) -> None:
    page.goto(changelist_url())
    for instance in instances:
        page.check(f"#result_list tr:has(.dwf-id[title='{instance.pk}']) input.action-select")
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")


def plan(page) -> dict[str, str]:
    """What the page says will happen, by instance id."""
    return page.eval_on_selector_all(
        "#dwf-bulk-plan tr[data-instance]",
        "rows => Object.fromEntries(rows.map(r => [r.dataset.instance, "
        "r.querySelector('.dwf-bulk-what').textContent.trim()]))")


@pytest.fixture
def selected():
    """Two instances a rollback would undo, and one it refuses (never started)."""
    ready = [WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
             for _ in range(2)]
    return ready, WorkflowInstanceFactory(workflow="admin-undo")


def test_bulk_rollback_asks_first_and_no_take_me_back_changes_nothing(page, selected):
    ready, idle = selected

    choose_on_the_list(page, "rollback_selected", *ready, idle)
    page.wait_for_selector("#dwf-bulk-plan")

    assert page.inner_text("#dwf-bulk-question") == (
        "Roll back on the 3 selected workflow instances? Undo what was done and return to "
        "idle.")
    assert plan(page) == {str(ready[0].pk): "Roll back", str(ready[1].pk): "Roll back",
                          str(idle.pk): 'Refused: Workflow "admin-undo" has not started'}
    assert page.inner_text("#dwf-bulk-applies") == (
        "Roll back applies to 2 of the 3 selected instances; the other stays as it is.")
    screenshot(page, "bulk-rollback-confirmation")
    assert statuses(*ready, idle) == ["running", "running", "idle"]

    page.click("text=No, take me back")
    page.wait_for_selector("#result_list")

    assert statuses(*ready, idle) == ["running", "running", "idle"]
    assert not Note.objects.exists()  # no compensation ran


def test_yes_im_sure_rolls_back_those_it_applies_to(page, selected):
    ready, idle = selected
    choose_on_the_list(page, "rollback_selected", *ready, idle)
    page.wait_for_selector("#dwf-bulk-plan")

    page.click("#dwf-bulk-confirm input[type=submit]")
    page.wait_for_selector("ul.messagelist li.success")

    assert page.inner_text("ul.messagelist") == "Roll back: 2 instances moved."
    assert statuses(*ready, idle) == ["idle", "idle", "idle"]
    assert Note.objects.filter(text__startswith="undo").count() == 2  # each step compensated


def test_bulk_cancel_takes_a_reason_on_its_confirmation_page(page):
    instances = [WorkflowInstanceFactory(started=True) for _ in range(2)]
    choose_on_the_list(page, "cancel_selected", *instances)
    page.wait_for_selector("#dwf-bulk-plan")

    page.fill("#dwf-bulk-confirm input[name=cancel-reason]", "Entered twice")
    page.click("#dwf-bulk-confirm input[type=submit]")
    page.wait_for_selector("ul.messagelist li.success")

    assert statuses(*instances) == ["cancelled", "cancelled"]
    assert {i.events.get(type="cancel").data["reason"] for i in instances} == {"Entered twice"}
