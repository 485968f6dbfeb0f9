"""The screenshots docs/admin.md shows, taken in Chromium from an order as it runs.

``admin-shop-order``: its charge fails with a 503, waits a second and is tried again, a manager
claims and approves it, two branches prepare the parcel; the page is open all along. The
test checks what the pictures are meant to show, then takes them
(artifacts/screenshots/docs-*.png; copied by hand into docs/images/).
"""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.models import WorkflowInstance
from tests.factories import UserFactory

from .conftest import SCREENSHOTS, instance_url, wait_until
from .test_browser_live import in_a_thread

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def now_at(instance, step: str) -> bool:
    return WorkflowInstance.objects.get(pk=instance.pk).current_step == step


def lanes(page) -> list[str]:
    return page.eval_on_selector_all("#dwf-timeline g.dwf-tl-lane",
                                     "lanes => lanes.map(l => l.dataset.lane)")


def outcomes(page, lane: str) -> list[str]:
    return page.eval_on_selector_all(
        f'#dwf-timeline g.dwf-tl-lane[data-lane="{lane}"] g.dwf-tl-bar',
        "bars => bars.map(b => b.dataset.outcome)")


def test_the_timeline_of_an_order_retried_approved_and_prepared(page):
    manager = UserFactory(username="margaret")
    manager.groups.add(Group.objects.get_or_create(name="managers")[0])
    order = services.create("admin-shop-order")
    worker = in_a_thread(lambda: services.start(order))  # attempt 1 fails after 1.2 s
    page.goto(instance_url(order))
    worker.join(timeout=30)
    wait_until(lambda: WorkflowInstance.objects.get(pk=order.pk).operations[0]["status"]
               == "waiting")
    time.sleep(1.1)  # the retry delay
    worker = in_a_thread(services.sweep)  # fires the retry: attempt 2 runs in this thread
    worker.join(timeout=30)
    wait_until(lambda: now_at(order, "approve"))
    time.sleep(1)  # the task waits for the manager a little
    services.claim(order, user=manager)
    time.sleep(0.5)
    worker = in_a_thread(lambda: services.complete(
        order, input={"decision": "approved", "comment": "Known customer"}, user=manager))
    worker.join(timeout=30)
    wait_until(lambda: now_at(order, "ship"))
    done = WorkflowInstance.objects.get(pk=order.pk)

    page.wait_for_function(f"() => document.getElementById('dwf-revision').textContent "
                           f"=== '{done.revision}'")  # the page caught up by itself
    assert lanes(page) == ["steps", "operation:charge-card", "task:approve",
                           "branch:prepare:pick", "branch:prepare:label"]
    charge = outcomes(page, "operation:charge-card")
    assert [o for o in charge if o != "queued"] == ["failed", "retry-wait", "succeeded"]
    assert outcomes(page, "task:approve") == ["done"]
    decided = page.text_content('#dwf-timeline g.dwf-tl-lane[data-lane="task:approve"] '
                                "g.dwf-tl-bar title")
    assert decided.startswith("A manager approves: decided by margaret")
    page.locator("#dwf-timeline").screenshot(path=str(SCREENSHOTS / "docs-timeline.png"))
    events = page.locator("#dwf-events")
    events.locator("tr.dwf-event-operation-retrying summary").click()
    events.screenshot(path=str(SCREENSHOTS / "docs-event-log.png"))
    page.locator("#dwf-operations").screenshot(path=str(SCREENSHOTS / "docs-operations.png"))
