"""Recovery in the admin: pause and resume, rewind's choice of steps, bulk actions that say
how many moved and why the others did not (grouped), a rollback's record, and the
confirmations of back from completed and of start after a rollback."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.models import WorkflowInstance
from django_workflows.reading.queries import marks_of
from tests.factories import WorkflowInstanceFactory

from .conftest import changelist_url, instance_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db


def refund(ctx):
    return {"refund": f"re_{ctx.state['order']}"}


@pytest.fixture(autouse=True)
def recovery_workflows() -> Iterator[None]:
    """``admin-order``: paid (undone by a refund whose id its compensation returns), packed,
    shipped; a completed order reopens (the default)."""
    order = Workflow(id="admin-order", title="An order", initial={"order": "A-1"}, steps=[
        Step("pay", title="Pay", compensate=refund), Step("pack", title="Pack"),
        Step("ship", title="Ship")],
        transitions=[Transition("pay", "pack"), Transition("pack", "ship")])
    registry.register(order, origin=__name__)
    yield
    registry.unregister(order.id)


def reload(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def page(client, instance) -> str:
    response = client.get(instance_url(instance))
    assert response.status_code == 200
    return response.content.decode()


def act(client, instance, name, **fields):
    response = client.post(instance_url(instance), {
        "_command": name, "revision": reload(instance).revision, **fields}, follow=True)
    assert response.status_code == 200
    return response


def bulk(client, name, *instances, **extra):
    response = client.post(changelist_url(), {
        "action": f"{name}_selected", "_selected_action": [str(i.pk) for i in instances],
        "index": "0", **extra}, follow=True)
    assert response.status_code == 200
    return response


def buttons_of(content: str) -> list[str]:
    return re.findall(r'name="_command" value="(\w+)"', content)


def confirm_of(content: str, name: str) -> str | None:
    found = re.search(rf'value="{name}" class="[^"]*" title="[^"]*" data-confirm="([^"]*)"',
                      content)
    return html.unescape(found.group(1)) if found else None


def text_of(content: str, element_id: str) -> str:
    """The text of the element with that id (up to the end tag of its own name)."""
    found = re.search(rf'<(\w+)[^>]*id="{element_id}"[^>]*>(.*?)</\1>', content, re.S)
    assert found, f"no #{element_id}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(2))).split())


# -- pause and resume --------------------------------------------------------------------


def test_pause_from_the_page_says_who_paused_it_and_why(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True)

    act(root_client, instance, "pause", **{"pause-reason": "the carrier is down"})
    content = page(root_client, instance)

    assert reload(instance).status == "paused"
    assert text_of(content, "dwf-status") == "Paused"
    words = text_of(content, "dwf-paused-words")
    assert "by root: the carrier is down" in words and "Resume makes it running again" in words
    assert buttons_of(content) == ["resume", "cancel"]
    assert "is paused (the carrier is down): resume it first" in content


def test_resume_from_the_page_gives_the_status_back(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True)
    services.pause(instance)

    response = act(root_client, instance, "resume")

    assert reload(instance).status == "running"
    assert ("success", 'Resume: done; the instance is now running at step "pay".') in \
        shown_messages(response)


def test_a_paused_instance_is_listed_as_paused_and_filtered_by_status(root_client):
    paused = WorkflowInstanceFactory(workflow="admin-order", started=True)
    WorkflowInstanceFactory(workflow="admin-order", started=True)
    services.pause(paused)

    content = root_client.get(changelist_url() + "?status__exact=paused").content.decode()

    assert content.count('dwf-status-paused">Paused</span>') == 1
    assert str(paused.pk)[:8] in content


# -- rewind --------------------------------------------------------------------------------


def test_rewind_offers_the_earlier_steps_as_a_choice(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True,
                                       commands=["next", "next"])

    content = page(root_client, instance)

    select = re.search(r'<select name="rewind-step"[^>]*>(.*?)</select>', content, re.S)
    assert select, "rewind's step is a choice"
    assert re.findall(r'<option value="(\w+)"', select.group(1)) == ["pack", "pay"]


def test_rewind_from_the_page_goes_back_to_the_step_chosen(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True,
                                       commands=["next", "next"])

    act(root_client, instance, "rewind", **{"rewind-step": "pay"})

    assert (reload(instance).current_step, reload(instance).history) == ("pay", ["pay"])


def test_rewind_to_a_step_not_in_the_history_is_a_message(root_client):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True, commands=["next"])

    response = act(root_client, instance, "rewind", **{"rewind-step": "ship"})

    [(level, text)] = shown_messages(response)
    assert level == "warning" and text.startswith('Rewind refused: Step "ship" is not in')


# -- confirmations -------------------------------------------------------------------------


def test_back_on_a_completed_instance_asks_first_and_a_running_one_does_not(root_client):
    running = WorkflowInstanceFactory(workflow="admin-order", started=True, commands=["next"])
    completed = WorkflowInstanceFactory(workflow="admin-order", started=True,
                                        commands=["next", "next", "next"])
    assert reload(completed).status == "completed"

    assert confirm_of(page(root_client, running), "back") is None
    assert confirm_of(page(root_client, completed), "back") == (
        'Workflow "admin-order" is completed: going back reopens it. Back?')
    assert confirm_of(page(root_client, completed), "rewind") == (
        'Workflow "admin-order" is completed: going back reopens it. Rewind?')


def test_start_on_a_rolled_back_instance_asks_first(root_client,
                                                    django_capture_on_commit_callbacks):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True, commands=["next"])
    with django_capture_on_commit_callbacks(execute=True):
        services.rollback(instance)
    fresh = WorkflowInstanceFactory(workflow="admin-order")

    assert confirm_of(page(root_client, instance), "start") == (
        'Workflow "admin-order" was rolled back: starting it runs its steps and their work '
        "again. Start?")
    assert confirm_of(page(root_client, fresh), "start") is None


# -- the rollback's record -----------------------------------------------------------------


def rolled_back(client, django_capture_on_commit_callbacks):
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True,
                                       state={"order": "A-7"}, commands=["next"])
    with django_capture_on_commit_callbacks(execute=True):
        act(client, instance, "rollback")
    assert reload(instance).status == "idle"
    return instance


def test_a_rolled_back_instance_keeps_its_record_on_its_page(root_client,
                                                             django_capture_on_commit_callbacks):
    instance = rolled_back(root_client, django_capture_on_commit_callbacks)

    content = page(root_client, instance)

    assert text_of(content, "dwf-status") == "Rolled back"
    assert "by root" in text_of(content, "dwf-rolled-back-words")
    before = text_of(content, "dwf-rolled-back-before")
    assert "running" in before and "pay → pack" in before
    items = text_of(content, "dwf-rolled-back-items")
    assert "the compensate hook of step pay" in items and '{"refund": "re_A-7"}' in items
    state = re.search(r'id="dwf-rolled-back-state">.*?<pre[^>]*>(.*?)</pre>', content, re.S)
    assert state and '"order": "A-7"' in html.unescape(state.group(1))


def test_the_list_and_the_page_both_say_rolled_back(root_client,
                                                    django_capture_on_commit_callbacks):
    instance = rolled_back(root_client, django_capture_on_commit_callbacks)

    listed = root_client.get(changelist_url()).content.decode()

    assert 'dwf-status-rolled-back">Rolled back</span>' in listed
    assert text_of(page(root_client, instance), "dwf-status") == "Rolled back"


def test_once_started_again_the_record_is_the_last_rollback(root_client,
                                                            django_capture_on_commit_callbacks):
    instance = rolled_back(root_client, django_capture_on_commit_callbacks)
    services.start(instance)

    content = page(root_client, instance)

    assert text_of(content, "dwf-status") == "Running"
    assert re.search(r'id="dwf-rolled-back">\s*<h2>Last rollback</h2>', content)


# -- bulk actions --------------------------------------------------------------------------


def test_bulk_pause_counts_the_moved_and_groups_the_others_by_reason(root_client):
    running = [WorkflowInstanceFactory(workflow="admin-order", started=True) for _ in range(2)]
    idle = [WorkflowInstanceFactory(workflow="admin-order") for _ in range(3)]

    response = bulk(root_client, "pause", *running, *idle)

    assert [reload(i).status for i in running] == ["paused", "paused"]
    messages = shown_messages(response)
    assert messages[0] == ("success", "Pause: 2 instances moved.")
    [(level, text)] = messages[1:]
    assert level == "warning"
    assert text.startswith('3 instances not moved: Pause refused: Workflow "admin-order" has '
                           "not started (admin-order ")
    assert all(str(i.pk)[:8] in text for i in idle)


def test_bulk_resume_resumes_the_paused(root_client):
    instances = [WorkflowInstanceFactory(workflow="admin-order", started=True) for _ in range(2)]
    for instance in instances:
        services.pause(instance)

    response = bulk(root_client, "resume", *instances)

    assert [reload(i).status for i in instances] == ["running", "running"]
    assert shown_messages(response) == [("success", "Resume: 2 instances moved.")]


def test_bulk_cancel_cancels_paused_instances_too(root_client):
    paused = WorkflowInstanceFactory(workflow="admin-order", started=True)
    services.pause(paused)
    running = WorkflowInstanceFactory(workflow="admin-order", started=True)

    bulk(root_client, "cancel", paused, running, post="yes")  # "Yes, I'm sure"

    assert [reload(i).status for i in (paused, running)] == ["cancelled", "cancelled"]


def test_bulk_retry_of_many_refused_names_five_and_counts_the_rest(root_client):
    instances = [WorkflowInstanceFactory(workflow="admin-order", started=True) for _ in range(7)]

    response = bulk(root_client, "retry", *instances)

    [(level, text)] = shown_messages(response)
    assert level == "warning"
    assert text.startswith('7 instances not moved: Retry refused: Workflow "admin-order" is '
                           'not failed or blocked (status "running")')
    assert text.endswith(" and 2 more)")


def test_bulk_retry_runs_failed_work_again_and_says_why_the_others_did_not(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        failed = [services.create("admin-fragile", start=True) for _ in range(2)]
    running = WorkflowInstanceFactory(workflow="admin-order", started=True)

    with django_capture_on_commit_callbacks(execute=True):
        response = bulk(root_client, "retry", *failed, running)

    assert [reload(i).current_step for i in failed] == ["review", "review"]
    messages = shown_messages(response)
    assert messages[0] == ("success", "Retry: 2 instances moved.")
    # (The admin's message list capitalises the first letter.)
    assert messages[1][1].startswith(f"Admin-order {str(running.pk)[:8]}…: Retry refused: ")


def test_bulk_pause_judges_access_on_each_row(clerk):
    guarded = WorkflowInstanceFactory(workflow="admin-guarded", started=True)
    order = WorkflowInstanceFactory(workflow="admin-order", started=True)

    response = bulk(logged_in(clerk), "pause", guarded, order)

    assert [reload(i).status for i in (guarded, order)] == ["running", "paused"]
    assert any("does not allow you to pause" in text for _, text in shown_messages(response))


def test_the_bulk_actions_include_pause_and_resume_but_not_rewind(root_client):
    content = root_client.get(changelist_url()).content.decode()

    actions = re.findall(r'<option value="(\w+)_selected">', content)
    assert {"retry", "pause", "resume", "cancel"} <= set(actions)
    assert "rewind" not in actions  # it needs a step


# -- the diagram ---------------------------------------------------------------------------


def test_a_reopened_instance_marks_the_steps_after_its_current_one_as_not_reached():
    instance = WorkflowInstanceFactory(workflow="admin-order", started=True,
                                       commands=["next", "next", "next", "back"])
    assert (reload(instance).status, reload(instance).current_step) == ("running", "pack")

    assert marks_of(reload(instance)) == {"pay": "completed", "pack": "current"}
