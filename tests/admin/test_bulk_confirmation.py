"""Bulk commands that undo work ask first, as Django's delete action does: a page lists each
selected instance and what the command will do to it (or why it is refused), and the command
runs only on "Yes, I'm sure", on the instances that page said it would act on."""

from __future__ import annotations

import html
import re

import pytest

from django_workflows import engine, services
from django_workflows.models import WorkflowInstance
from tests.factories import WorkflowInstanceFactory
from tests.testapp.models import Note

from .conftest import changelist_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db

# The bulk actions whose command undoes work, as the declarations say (not named here).
DESTRUCTIVE = [name for name, declared in engine.ACTIONS.items()
               if declared.destructive and not any(i.required for i in declared.inputs())]


def statuses(*instances) -> list[str]:
    rows = {row.pk: row for row in WorkflowInstance.objects.filter(
        pk__in=[i.pk for i in instances])}
    return [rows[i.pk].status for i in instances]


def choose(client, name, *instances, url=None, **extra):
    """Select instances on the list, choose the action, press Go."""
    return client.post(url or changelist_url(), {
        "action": f"{name}_selected", "_selected_action": [str(i.pk) for i in instances],
        "index": "0", **extra}, follow=True)


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def planned(response) -> dict[str, str]:
    """What the confirmation page says will happen, by instance id."""
    content = response.content.decode()
    return {pk: text_of(what) for pk, what in re.findall(
        r'<tr data-instance="([^"]+)".*?<td class="dwf-bulk-what">(.*?)</td>', content, re.S)}


def question(response) -> str:
    found = re.search(r'<p id="dwf-bulk-question">(.*?)</p>', response.content.decode(), re.S)
    return text_of(found.group(1)) if found else ""


def confirm(client, response, url=None, **typed):
    """Press "Yes, I'm sure": post the confirmation form as the page has it."""
    form = re.search(r'<form[^>]*id="dwf-bulk-confirm".*?</form>', response.content.decode(),
                     re.S)
    assert form, "the page has no confirmation form"
    data: dict[str, list[str]] = {}
    for attributes in re.findall(r"<input([^>]*)>", form.group(0)):
        name = re.search(r'name="([^"]*)"', attributes)
        value = re.search(r'value="([^"]*)"', attributes)
        if name and 'type="submit"' not in attributes:
            data.setdefault(name.group(1), []).append(html.unescape(value.group(1))
                                                      if value else "")
    for name, value in typed.items():
        data[name] = [value]
    return client.post(url or changelist_url(), data, follow=True)


def rolled_back_ready(count: int = 2) -> list[WorkflowInstance]:
    return [WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
            for _ in range(count)]


def test_the_commands_that_undo_work_are_rollback_and_cancel():
    assert set(DESTRUCTIVE) == {"rollback", "cancel"}


def test_bulk_rollback_asks_first_and_changes_nothing(root_client):
    instances = rolled_back_ready()

    response = choose(root_client, "rollback", *instances)

    assert response.status_code == 200
    assert question(response) == ("Roll back on the 2 selected workflow instances? "
                                  "Undo what was done and return to idle.")
    assert statuses(*instances) == ["running", "running"]
    assert not Note.objects.exists()  # no compensation ran
    assert shown_messages(response) == []


@pytest.mark.parametrize("name", DESTRUCTIVE)
def test_every_bulk_command_that_undoes_work_asks_first(root_client, name):
    instances = rolled_back_ready()
    before = [WorkflowInstance.objects.get(pk=i.pk).revision for i in instances]

    response = choose(root_client, name, *instances)

    assert set(planned(response)) == {str(i.pk) for i in instances}
    assert [WorkflowInstance.objects.get(pk=i.pk).revision for i in instances] == before


def test_the_page_says_what_happens_to_each_instance_or_why_it_is_refused(root_client):
    ready = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
    never_started = WorkflowInstanceFactory(workflow="admin-undo")

    response = choose(root_client, "rollback", ready, never_started)

    assert planned(response) == {
        str(ready.pk): "Roll back",
        str(never_started.pk): 'Refused: Workflow "admin-undo" has not started'}
    assert "Roll back applies to 1 of the 2 selected instances" in text_of(
        response.content.decode())


def test_yes_im_sure_rolls_back_the_instances_listed(root_client,
                                                       django_capture_on_commit_callbacks):
    instances = rolled_back_ready()
    page = choose(root_client, "rollback", *instances)

    with django_capture_on_commit_callbacks(execute=True):
        response = confirm(root_client, page)

    assert statuses(*instances) == ["idle", "idle"]
    assert shown_messages(response) == [("success", "Roll back: 2 instances moved.")]
    assert Note.objects.filter(text__startswith="undo").count() == 2


def test_confirming_acts_only_on_the_instances_the_page_said_it_would(
        root_client, django_capture_on_commit_callbacks):
    ready = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
    never_started = WorkflowInstanceFactory(workflow="admin-undo")
    page = choose(root_client, "rollback", ready, never_started)
    services.start(never_started)  # it could be rolled back now, but nobody saw that

    with django_capture_on_commit_callbacks(execute=True):
        confirm(root_client, page)

    assert statuses(ready, never_started) == ["idle", "running"]


def test_an_instance_changed_since_the_page_is_not_rolled_back(
        root_client, django_capture_on_commit_callbacks):
    changed, kept = rolled_back_ready()
    page = choose(root_client, "rollback", changed, kept)
    services.back(changed)  # someone moved it meanwhile: not what was confirmed

    with django_capture_on_commit_callbacks(execute=True):
        response = confirm(root_client, page)

    assert statuses(changed, kept) == ["running", "idle"]
    messages = dict(shown_messages(response))
    assert messages["success"] == "Roll back: 1 instance moved."
    assert "Roll back not done: the instance changed since the page was loaded" in \
        messages["warning"]


def test_when_nothing_would_be_done_the_page_offers_no_confirmation(root_client):
    idle = [WorkflowInstanceFactory(workflow="admin-undo") for _ in range(2)]

    response = choose(root_client, "rollback", *idle)

    content = text_of(response.content.decode())
    assert "Roll back applies to none of the selected instances: there is nothing to " \
           "confirm." in content
    assert 'id="dwf-bulk-confirm"' not in response.content.decode()


def test_bulk_cancel_asks_for_its_optional_reason_and_records_it(root_client):
    instances = [WorkflowInstanceFactory(started=True) for _ in range(2)]
    page = choose(root_client, "cancel", *instances)
    assert 'name="cancel-reason"' in page.content.decode()

    confirm(root_client, page, **{"cancel-reason": "Duplicate orders"})

    assert statuses(*instances) == ["cancelled", "cancelled"]
    for instance in instances:
        event = instance.events.get(type="cancel")
        assert event.data["reason"] == "Duplicate orders"


def test_bulk_back_runs_at_once_when_no_instance_reopens(root_client):
    instances = [WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
                 for _ in range(2)]

    response = choose(root_client, "back", *instances)

    assert shown_messages(response) == [("success", "Back: 2 instances moved.")]
    assert 'id="dwf-bulk-question"' not in response.content.decode()


def test_bulk_back_asks_first_when_it_would_reopen_a_completed_instance(root_client):
    running = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])
    done = WorkflowInstanceFactory(workflow="admin-undo", started=True,
                                   commands=["next", "next", "next"])
    assert statuses(done) == ["completed"]

    response = choose(root_client, "back", running, done)

    assert planned(response) == {
        str(running.pk): "Back",
        str(done.pk): 'Back — Workflow "admin-undo" is completed: going back reopens it'}
    assert statuses(running, done) == ["running", "completed"]
    confirm(root_client, response)
    assert statuses(running, done) == ["running", "running"]


def test_bulk_start_of_a_rolled_back_instance_asks_first(root_client,
                                                         django_capture_on_commit_callbacks):
    [instance] = rolled_back_ready(1)
    with django_capture_on_commit_callbacks(execute=True):
        services.rollback(instance)
    assert statuses(instance) == ["idle"]

    response = choose(root_client, "start", instance)

    assert planned(response) == {str(instance.pk): (
        'Start — Workflow "admin-undo" was rolled back: starting it runs its steps and their '
        "work again")}
    assert statuses(instance) == ["idle"]


def test_selecting_every_filtered_instance_lists_each_and_confirms_them_all(root_client):
    undo = rolled_back_ready(3)
    other = WorkflowInstanceFactory(started=True)
    url = changelist_url() + "?workflow=admin-undo"

    page = choose(root_client, "cancel", undo[0], url=url, select_across="1")
    assert set(planned(page)) == {str(i.pk) for i in undo}
    confirm(root_client, page, url=url)

    assert statuses(*undo, other) == ["cancelled"] * 3 + ["running"]


def test_a_clerk_refused_by_the_definitions_rule_sees_why_on_the_page(clerk):
    guarded = WorkflowInstanceFactory(workflow="admin-guarded", started=True)

    response = choose(logged_in(clerk), "cancel", guarded)

    [what] = planned(response).values()
    assert what.startswith("Refused: ") and "does not allow you to cancel" in what
