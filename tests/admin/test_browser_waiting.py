"""The instance page of an instance that waits for a signal, in a real browser: one of the
signal's senders reads what it waits for, sends it by hand, and sees the instance move on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group

from django_workflows import services
from django_workflows.models import WorkflowInstance
from django_workflows.reading.waiting import waiting_of
from tests.shown_times import deadline_as_shown

from .conftest import admin_page, instance_url, screenshot, with_permissions

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def marks(page) -> dict[str, str]:
    return page.eval_on_selector_all(
        "#dwf-diagram g.dwf-step",
        "steps => Object.fromEntries(steps.map(s => [s.dataset.step, s.dataset.mark]))")


def waiting_order(intent: str) -> WorkflowInstance:
    instance = services.create("payment", state={"intent": intent, "payment": None},
                               start=True)
    return services.next(instance)


@pytest.fixture
def bot_page(browser, live_server):
    """A page signed in as a payment bot: staff who may view instances, and one of the
    signal's senders (group:payment-bots), without the change permission."""
    bot = with_permissions("bot", "view_workflowinstance")
    bot.groups.add(Group.objects.get_or_create(name="payment-bots")[0])
    with admin_page(browser, live_server, "bot") as page:
        yield page


def test_a_sender_sends_the_awaited_signal_by_hand_and_the_page_shows_the_instance_moved_on(
        bot_page):
    page = bot_page
    before = datetime.now(UTC)
    instance = waiting_order("pi_1")
    page.goto(instance_url(instance))
    after = datetime.now(UTC)

    deadline = waiting_of(instance.snap).until
    assert deadline is not None
    assert page.inner_text("#dwf-waiting-words") in {
        f"Waiting for the signal payment-confirmed (correlation pi_1) until {shown}"
        for shown in deadline_as_shown(deadline, before, after)}
    assert marks(page) == {"cart": "completed", "await-payment": "waiting", "ship": ""}
    assert page.input_value("#dwf-signal-form textarea[name=payload]") == "{}"
    assert page.locator("#dwf-commands button").count() == 0  # no change permission
    screenshot(page, "waiting-signal-form")

    # Not JSON: said beside the field, with what was typed kept; nothing sent.
    page.fill("#dwf-signal-form textarea[name=payload]", '{"amount": 12,')
    page.click("#dwf-signal-form input[name=_signal]")
    page.wait_for_selector("#dwf-signal-payload-errors .errorlist")
    assert "Enter valid JSON" in page.inner_text("#dwf-signal-payload-errors")
    assert page.input_value("#dwf-signal-form textarea[name=payload]") == '{"amount": 12,'
    screenshot(page, "waiting-signal-bad-json")

    page.fill("#dwf-signal-form textarea[name=payload]", '{"amount": 12, "charge": "ch_1"}')
    page.fill("#dwf-signal-form input[name=message_id]", "evt_by_hand")
    page.click("#dwf-signal-form input[name=_signal]")

    page.wait_for_selector(".messagelist .success")
    assert page.inner_text(".messagelist .success") == (
        'The signal "payment-confirmed" was taken: the instance is running, at step "ship".')
    assert page.get_attribute("#dwf-current-step", "data-step") == "ship"
    assert marks(page) == {"cart": "completed", "await-payment": "completed", "ship": "current"}
    assert page.locator("#dwf-waiting").count() == 0
    assert '"charge": "ch_1"' in page.inner_text("#dwf-state-json")
    screenshot(page, "waiting-signal-sent")
    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.current_step, row.state["payment"]) == ("ship", {"amount": 12,
                                                                 "charge": "ch_1"})


def test_an_open_page_follows_a_signal_sent_elsewhere_without_a_reload(bot_page):
    page = bot_page
    instance = waiting_order("pi_2")
    page.goto(instance_url(instance))
    assert page.locator("#dwf-waiting").count() == 1

    services.signal("payment", "payment-confirmed", {"amount": 3}, correlation="pi_2")

    page.wait_for_selector("#dwf-current-step[data-step=ship]", timeout=15_000)
    assert page.locator("#dwf-waiting").count() == 0
    assert marks(page)["await-payment"] == "completed"
    assert page.is_hidden("#dwf-changed")
