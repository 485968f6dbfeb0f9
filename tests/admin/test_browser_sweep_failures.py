"""What the sweep set aside, as an operator finds it in a real browser (Chromium): the
banner above the instance list, its link to the sweep failures, the failure's instance,
and *Try again* on the instance's page with the message after it; and *Try again* as an
action of the failures' list."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.models import SweepFailure, WorkflowInstance
from tests.testapp.sweep_failures import (
    ERROR,
    bring_back,
    instance_of_a_removed_workflow,
    later,
    sweep_until_set_aside,
)

from .conftest import changelist_url, instance_url, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def retries_twice(settings) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SWEEP_RETRIES": 2}


def test_an_operator_follows_the_banner_to_the_failure_and_tries_it_again_on_its_page(
        page, retries_twice):
    with instance_of_a_removed_workflow() as instance:
        sweep_until_set_aside(instance)

        page.goto(changelist_url())
        banner = page.inner_text("ul.messagelist li.warning")
        assert "The sweep set aside 1 item that kept failing" in banner
        page.click("a.dwf-sweep-failures-link")
        page.wait_for_url("**/sweepfailure/?state=set-aside")

        row = page.inner_text("#result_list tbody tr")
        assert ERROR in row and "Set aside since" in row
        screenshot(page, "sweep-failures")
        page.click("#result_list tbody tr a.dwf-sweep-failure-instance")
        page.wait_for_url(f"**{instance_url(instance)}")

        section = page.inner_text("#dwf-sweep-failures")
        assert ERROR in section and "Set aside since" in section
        screenshot(page, "sweep-failures-on-the-instance-page")
        bring_back()  # the deploy that mends it
        page.click("#dwf-sweep-failures button[name=_retry_sweep]")

        page.wait_for_selector("ul.messagelist li.success")
        assert page.inner_text("ul.messagelist li.success") == (
            "The sweep tries 1 item of this instance again on its next turn.")
        assert page.locator("#dwf-sweep-failures").count() == 0
        assert not SweepFailure.objects.exists()

        services.sweep(now=later(2))  # the open page follows the step that moved on
        wait_until(lambda: page.inner_text("#dwf-current-step").strip() == "after")
        assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "after"


def test_try_again_from_the_failures_list(page, retries_twice):
    with instance_of_a_removed_workflow() as instance:
        sweep_until_set_aside(instance)

        page.goto("/admin/django_workflows/sweepfailure/")
        page.check("#result_list tbody input.action-select")
        page.select_option("select[name=action]", "try_again")
        page.click("button[name=index]")

        page.wait_for_selector("ul.messagelist li.success")
        assert page.inner_text("ul.messagelist li.success") == (
            "The sweep tries 1 item again on its next turn.")
        assert "0 sweep failures" in page.inner_text("#changelist")
        assert not SweepFailure.objects.exists()
