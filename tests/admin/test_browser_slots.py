"""The instance page of a charge whose attempt waits for a slot (its ``Limit``), in Chromium:
the operations panel and the timeline say what it waits for, and the open page follows it
when a slot frees.

``admin-charges``: one operation held to 2 running per merchant. A ``HoldingRunner``
stands for the workers: it keeps the tokens it is handed, and the test runs one when it
likes.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from django.test import override_settings

from django_workflows import Limit, Operation, Step, Workflow, registry, services
from django_workflows.models import Attempt, WorkflowInstance
from django_workflows.runners.worker import run_attempt

from .conftest import instance_url, screenshot
from .test_browser_timeline import bars

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WAITING = "waiting for a slot (merchant-7: 2 of 2 running)"
BADGE = 'tr.dwf-operation[data-operation="charge"] .dwf-op-status'


class HoldingRunner:
    """Workers that never come by themselves: the tokens wait here for the test."""

    held: list[str] = []

    def enqueue(self, tokens: Sequence[str]) -> None:
        HoldingRunner.held.extend(tokens)


HOLDING = override_settings(DJANGO_WORKFLOWS={
    "RUNNER": "tests.admin.test_browser_slots.HoldingRunner"})


@pytest.fixture(autouse=True)
def charges_workflow():
    HoldingRunner.held.clear()
    definition = Workflow(id="admin-charges", steps=[Step("charge", operations=[Operation(
        "charge", title="Charge", run=lambda ctx: "charged",
        concurrency=Limit(key=lambda ctx: f"merchant-{ctx.state['merchant']}", max=2))])])
    registry.register(definition, origin="tests.admin.test_browser_slots")
    with HOLDING:
        yield
    registry.unregister(definition.id)
    HoldingRunner.held.clear()


def charges(count: int) -> list[WorkflowInstance]:
    return [services.create("admin-charges", state={"merchant": 7}, start=True)
            for _ in range(count)]


def status_of(instance: WorkflowInstance) -> str:
    return Attempt.objects.get(token=instance.operations[0]["token"]).status


def test_the_page_of_a_waiting_charge_says_what_it_waits_for_until_a_slot_frees(page):
    first, _, third = charges(3)
    assert status_of(third) == "waiting"

    page.goto(instance_url(third))

    badge = page.locator(BADGE)
    assert badge.inner_text() == WAITING
    assert "dwf-status-waiting" in badge.get_attribute("class")
    ((outcome, said),) = bars(page, "operation:charge")  # the timeline's bar
    assert outcome == "queued" and said.startswith("attempt 1 of Charge waits for a slot")
    screenshot(page, "slots-waiting-charge")

    # The first charge ends: its slot goes to this one, and the open page follows.
    HoldingRunner.held.remove(first.operations[0]["token"])
    assert run_attempt(first.operations[0]["token"], heartbeat_thread=False)
    assert status_of(third) == "queued"
    page.wait_for_function("selector => document.querySelector(selector).textContent"
                           " === 'queued'", arg=BADGE)
    assert "dwf-status-queued" in badge.get_attribute("class")


def test_a_charge_with_a_slot_reads_queued_as_before(page):
    first, *_ = charges(3)

    page.goto(instance_url(first))

    assert page.locator(BADGE).inner_text() == "queued"
