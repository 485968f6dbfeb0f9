"""The instance page says what the instance waits for, and lets a permitted user send the
signal by hand; the changelist finds the instances that wait (DESIGN.md §8)."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import Group

from django_workflows import clock as clock_module
from django_workflows import services
from django_workflows.admin.instance_waiting import when
from django_workflows.models import WorkflowInstance, WorkflowSignal
from django_workflows.testing import FakeClock

from .conftest import (
    changelist_url,
    instance_url,
    logged_in,
    messages_of,
    shown_messages,
    with_permissions,
)

pytestmark = pytest.mark.django_db

PAID = '{"amount": 12, "charge": "ch_1"}'
NOON = datetime(2026, 12, 3, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def clock():
    """Noon UTC on 3 December 2026, standing still."""
    fake = FakeClock(NOON)
    clock_module.use(fake.now)
    yield fake
    clock_module.use(None)


def waiting_order(intent: str = "pi_1", **options: Any) -> WorkflowInstance:
    instance = services.create("payment", state={"intent": intent, "payment": None},
                               start=True, **options)
    return services.next(instance)


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def page(client, instance) -> str:
    response = client.get(instance_url(instance))
    assert response.status_code == 200
    return response.content.decode()


def words(content: str) -> str | None:
    """The sentence the page says of waiting, as a person reads it (no tags)."""
    found = re.search(r'<p class="dwf-waiting-words" id="dwf-waiting-words">(.*?)</p>',
                      content, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip() if found else None


def has_form(content: str) -> bool:
    return 'id="dwf-signal-form"' in content


def post_signal(client, instance, payload: str = PAID, **fields: str):
    return client.post(instance_url(instance), {
        "_signal": "Send the signal", "signal": "payment-confirmed", "payload": payload,
        **fields})


def marks(content: str) -> dict[str, str]:
    return dict(re.findall(r'data-step="([^"]+)" data-mark="([^"]*)"', content))


@pytest.fixture
def payment_bot(db):
    """Staff who may view instances, and is named in the signal's senders (group:payment-bots)."""
    user = with_permissions("bot", "view_workflowinstance")
    user.groups.add(Group.objects.get_or_create(name="payment-bots")[0])
    return user


# -- the words ------------------------------------------------------------------------------


def test_the_page_says_which_signal_it_waits_for_its_correlation_and_until_when(
        root_client, clock):
    instance = waiting_order()

    assert words(page(root_client, instance)) == (
        "Waiting for the signal payment-confirmed (correlation pi_1) until 13:00 UTC")


def test_a_timer_says_until_when_with_its_date_on_another_day(root_client, clock):
    instance = services.create("reminder", start=True)

    assert words(page(root_client, instance)) == "Waiting until 6 Dec 2026 12:00 UTC (timer)"


def test_the_time_is_in_the_current_time_zone_with_its_name(clock, settings):
    settings.TIME_ZONE = "Europe/Berlin"

    assert when(datetime(2026, 12, 3, 13, 5, tzinfo=UTC)) == "14:05 CET"
    assert when(datetime(2027, 7, 1, 13, 5, tzinfo=UTC)) == "1 Jul 2027 15:05 CEST"


def test_a_task_says_which_task_with_a_link_and_when_it_is_due(root_client, clock):
    instance = services.next(services.create("approval", start=True))

    content = page(root_client, instance)

    assert words(content) == "Waiting for the task Manager's decision, due 13:00 UTC"
    task = instance.tasks.get()
    assert f'href="/admin/django_workflows/workflowtask/{task.pk}/change/"' in content
    assert not has_form(content)


def test_a_task_without_a_due_date_says_which_task_and_nothing_of_when(root_client):
    instance = services.create("admin-undated", start=True)

    assert words(page(root_client, instance)) == "Waiting for the task Decide"


def test_an_instance_that_waits_for_nothing_says_nothing_of_waiting(root_client):
    instance = services.create("payment", state={"intent": "pi_1", "payment": None},
                               start=True)

    content = page(root_client, instance)

    assert words(content) is None and 'id="dwf-waiting"' not in content


def test_the_diagram_marks_the_step_that_waits_and_says_what_each_step_waits_for(
        root_client):
    instance = waiting_order()

    content = page(root_client, instance)

    assert marks(content) == {"cart": "completed", "await-payment": "waiting", "ship": ""}
    assert "⏳ signal payment-confirmed" in content
    assert ">waiting for the signal</span>" in content  # in the legend


def test_the_diagram_marks_a_step_with_an_open_task_current(root_client):
    instance = services.next(services.create("approval", start=True))

    assert marks(page(root_client, instance))["decision"] == "current"


def test_the_live_view_draws_the_words_anew_once_the_instance_moved_on(root_client):
    instance = waiting_order()
    revision = instance.revision
    services.signal("payment", "payment-confirmed", {"amount": 1}, instance=instance)

    live = f"{instance_url(instance).removesuffix('change/')}live/"
    parts = root_client.get(live, {"revision": revision}).json()["parts"]

    assert 'id="dwf-waiting"' not in parts["summary"]
    assert marks(parts["diagram"])["await-payment"] == "completed"


def test_the_live_view_draws_the_words_and_the_form_while_it_waits(root_client):
    instance = waiting_order()

    live = f"{instance_url(instance).removesuffix('change/')}live/"
    parts = root_client.get(live, {"revision": 0}).json()["parts"]

    assert "Waiting for the signal" in parts["summary"]
    assert has_form(parts["summary"]) and 'name="csrfmiddlewaretoken"' in parts["summary"]


# -- the form: who gets it ----------------------------------------------------------------


def test_a_user_who_may_change_instances_gets_the_form_with_an_empty_object(operator):
    content = page(logged_in(operator), waiting_order())

    assert has_form(content)
    payload = re.search(r'<textarea name="payload"[^>]*>(.*?)</textarea>', content, re.S)
    assert html.unescape(payload.group(1)).strip() == "{}"


def test_one_of_the_signals_senders_gets_the_form_without_the_change_permission(payment_bot):
    assert has_form(page(logged_in(payment_bot), waiting_order()))


def test_a_viewer_who_may_not_send_gets_the_words_but_no_form(viewer):
    content = page(logged_in(viewer), waiting_order())

    assert words(content).startswith("Waiting for the signal") and not has_form(content)


def test_a_timer_offers_no_form(root_client):
    assert not has_form(page(root_client, services.create("reminder", start=True)))


# -- the form: sending --------------------------------------------------------------------


def test_a_permitted_user_sends_the_signal_and_the_instance_moves_on(operator):
    instance = waiting_order()
    client = logged_in(operator)

    response = post_signal(client, instance, message_id="evt_1")

    assert response.status_code == 302
    row = reload(instance)
    assert (row.current_step, row.state["payment"]) == ("ship", {"amount": 12, "charge": "ch_1"})
    assert messages_of(response) == [
        'The signal "payment-confirmed" was taken: the instance is running, at step "ship".']
    signal = WorkflowSignal.objects.get()
    assert (signal.sender, signal.message_id) == (operator, "evt_1")
    assert row.events.get(type="signal").actor == operator


def test_a_sender_of_the_signal_sends_it_without_the_change_permission(payment_bot):
    instance = waiting_order()

    response = post_signal(logged_in(payment_bot), instance)

    assert response.status_code == 302 and reload(instance).current_step == "ship"


def test_sending_again_from_a_page_that_still_shows_the_form_sends_nothing(operator):
    instance = waiting_order()
    post_signal(logged_in(operator), instance, message_id="evt_1")
    revision = reload(instance).revision

    # Another tab, still showing the form: the instance no longer waits.
    response = post_signal(logged_in(operator), instance, message_id="evt_2")

    assert messages_of(response) == [
        'Not sent: this instance no longer waits for the signal "payment-confirmed".']
    assert WorkflowSignal.objects.count() == 1 and reload(instance).revision == revision


def test_a_message_id_seen_before_says_so_and_what_became_of_that_signal(operator):
    services.signal("payment", "payment-confirmed", {"amount": 5}, correlation="pi_other",
                    message_id="evt_1")  # kept: nobody waits with that correlation
    instance = waiting_order()

    response = post_signal(logged_in(operator), instance, message_id="evt_1")

    assert messages_of(response) == [
        'The message id "evt_1" was seen before. The signal "payment-confirmed" is kept: the '
        "instance did not take it now; its step takes it when it waits for it."]
    assert WorkflowSignal.objects.count() == 1
    assert reload(instance).current_step == "await-payment"


def test_bad_json_is_shown_beside_the_field_and_nothing_is_sent(operator):
    instance = waiting_order()

    response = post_signal(logged_in(operator), instance, payload='{"amount": 12,')

    assert response.status_code == 200
    content = response.content.decode()
    errors = re.search(r'<div id="dwf-signal-payload-errors">(.*?)</div>', content, re.S)
    assert "Enter valid JSON" in errors.group(1)
    assert html.unescape(re.search(r'<textarea name="payload"[^>]*>(.*?)</textarea>', content,
                                   re.S).group(1)).strip() == '{"amount": 12,'
    assert not WorkflowSignal.objects.exists()
    assert reload(instance).current_step == "await-payment"


@pytest.mark.parametrize("payload", ["NaN", "1e999", "[" * 200 + "]" * 200, '"a\\u0000b"'])
def test_json_no_database_stores_is_refused_beside_the_field(operator, payload):
    response = post_signal(logged_in(operator), waiting_order(), payload=payload)

    assert response.status_code == 200
    assert 'class="form-row errors"' in response.content.decode()
    assert not WorkflowSignal.objects.exists()


def test_a_payload_that_breaks_the_schema_shows_each_field_beside_the_payload(operator):
    instance = waiting_order()

    response = post_signal(logged_in(operator), instance, payload='{"amount": "lots"}')

    assert response.status_code == 200
    errors = re.search(r'<div id="dwf-signal-payload-errors">(.*?)</div>',
                       response.content.decode(), re.S).group(1)
    assert "amount: &#x27;lots&#x27; is not of type &#x27;integer&#x27;" in errors
    assert not WorkflowSignal.objects.exists()


def test_a_payload_larger_than_the_limit_is_refused_beside_the_field(operator, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "MAX_STATE_BYTES": 50}

    response = post_signal(logged_in(operator), waiting_order(),
                           payload='{"amount": 1, "charge": "' + "c" * 100 + '"}')

    assert response.status_code == 200
    assert "the limit is 50 bytes" in response.content.decode()


def test_a_user_who_may_not_send_is_told_so_and_nothing_is_sent(viewer):
    instance = waiting_order()

    response = post_signal(logged_in(viewer), instance)

    assert response.status_code == 302
    assert messages_of(response) == [
        'Not sent: You may not send the signal "payment-confirmed" to workflow "payment".']
    assert reload(instance).current_step == "await-payment"
    assert not WorkflowSignal.objects.exists()


def test_a_cancelled_instance_is_not_sent_anything(operator):
    instance = services.cancel(waiting_order())

    response = post_signal(logged_in(operator), instance)

    assert response.status_code == 302 and not WorkflowSignal.objects.exists()
    assert messages_of(response) == [
        'Not sent: this instance no longer waits for the signal "payment-confirmed".']


def test_a_page_shown_again_with_errors_keeps_the_message_and_the_words(operator):
    instance = waiting_order()

    response = post_signal(logged_in(operator), instance, payload="{", message_id="evt_9")

    content = response.content.decode()
    assert words(content).startswith("Waiting for the signal payment-confirmed")
    assert 'value="evt_9"' in content
    assert shown_messages(response) == []


# -- the changelist ----------------------------------------------------------------------


def test_the_changelist_filters_the_instances_by_what_they_wait_for(root_client):
    signal = waiting_order()
    timer = services.create("reminder", start=True)
    task = services.next(services.create("approval", start=True))
    services.create("payment", state={"intent": "pi_2", "payment": None}, start=True)

    def listed(value: str) -> set[str]:
        content = root_client.get(changelist_url(), {"waiting": value}).content.decode()
        return set(re.findall(r'<span class="dwf-id" title="([^"]+)">', content))

    assert listed("signal") == {str(signal.pk)}
    assert listed("timer") == {str(timer.pk)}
    assert listed("task") == {str(task.pk)}
    assert listed("nothing-of-the-kind") == set()


def test_the_waiting_filter_offers_signals_timers_and_tasks(root_client):
    content = root_client.get(changelist_url()).content.decode()

    assert "By waiting for" in content
    assert all(f"?waiting={value}" in content for value in ("signal", "timer", "task"))


def test_a_signal_taken_takes_the_instance_out_of_the_signal_filter(root_client):
    instance = waiting_order()
    services.signal("payment", "payment-confirmed", {"amount": 1}, instance=instance)

    content = root_client.get(changelist_url(), {"waiting": "signal"}).content.decode()

    assert str(instance.pk) not in content

