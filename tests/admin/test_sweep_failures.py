"""What the sweep could not do, shown to operators (issue 36, part 3): the banner above the
admin's lists counts it and links to the sweep failures; their changelist shows each item
with its error and its instance, and *Try again* lets the sweep try it again; the
instance's page shows its own with a *Try again* button."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from django_workflows import services
from django_workflows.models import SweepFailure, WorkflowInstance
from tests.factories import WorkflowInstanceFactory
from tests.testapp.sweep_failures import (
    ERROR,
    bring_back,
    instance_of_a_removed_workflow,
    later,
    sweep_until_set_aside,
)

from .conftest import (
    changelist_url,
    instance_url,
    logged_in,
    messages_of,
    shown_messages,
    with_permissions,
)

pytestmark = pytest.mark.django_db

FAILURES = "admin:django_workflows_sweepfailure_changelist"


def failures_url() -> str:
    return reverse(FAILURES)


@pytest.fixture
def retries_twice(settings) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SWEEP_RETRIES": 2}


@pytest.fixture
def removed(retries_twice) -> Iterator[WorkflowInstance]:
    with instance_of_a_removed_workflow() as instance:
        yield instance


@pytest.fixture
def set_aside(removed) -> SweepFailure:
    return sweep_until_set_aside(removed)


def text(response) -> str:
    assert response.status_code == 200, response
    return html.unescape(response.content.decode())


def try_again(client, *failures: SweepFailure):
    return client.post(failures_url(), {"action": "try_again", "index": "0",
                                        ACTION_CHECKBOX_NAME: [f.pk for f in failures]})


def sweep_failure_section(content: str) -> str:
    found = re.search(r'<section class="[^"]*" id="dwf-sweep-failures">(.*?)</section>',
                      content, re.S)
    assert found, "no section #dwf-sweep-failures"
    return found.group(1)


# -- the banner ------------------------------------------------------------------------


def test_the_banner_on_the_instance_list_counts_what_the_sweep_set_aside_and_links_to_it(
        root_client, set_aside):
    response = root_client.get(changelist_url())

    [(level, words)] = shown_messages(response)
    assert level == "warning"
    assert "The sweep set aside 1 item that kept failing" in words
    links = re.findall(r'<a class="dwf-sweep-failures-link" href="([^"]+)"',
                       response.content.decode())
    assert [html.unescape(link) for link in links] == [f"{failures_url()}?state=set-aside"]


def test_the_banner_counts_items_still_tried_again_apart(root_client, removed):
    services.sweep(now=later())  # failed once: tried again later, not set aside

    [(level, words)] = shown_messages(root_client.get(changelist_url()))

    assert level == "info"
    assert "The sweep could not do 1 item" in words and "tried again shortly" in words
    assert "set aside" in words  # what happens next


def test_the_admin_s_home_page_shows_the_banner_too(root_client, set_aside):
    content = text(root_client.get(reverse("admin:index")))

    assert "The sweep set aside 1 item that kept failing" in content
    assert f'href="{failures_url()}?state=set-aside"' in content


def test_no_banner_while_nothing_failed(root_client):
    WorkflowInstanceFactory(started=True)

    assert shown_messages(root_client.get(changelist_url())) == []
    assert "dwf-sweep-failures-link" not in text(root_client.get(reverse("admin:index")))


def test_the_banner_gives_no_link_to_staff_who_may_not_see_sweep_failures(set_aside):
    viewer = with_permissions("viewer", "view_workflowinstance")

    response = logged_in(viewer).get(changelist_url())

    [(_, words)] = shown_messages(response)
    assert "The sweep set aside 1 item that kept failing" in words
    assert "dwf-sweep-failures-link" not in response.content.decode()


# -- the sweep failures' changelist ------------------------------------------------------


def test_the_failures_list_shows_the_item_its_error_its_instance_and_its_state(root_client,
                                                                             set_aside, removed):
    content = text(root_client.get(failures_url()))

    row = re.search(r'<tr[^>]*>.*?dwf-sweep-failure-what.*?</tr>', content, re.S).group(0)
    assert f"Deadline {set_aside.key}" in row
    assert ERROR in row
    assert f'href="{instance_url(removed)}"' in row
    assert "Set aside since" in row
    assert re.search(r"<td class=\"field-failures[^\"]*\">2</td>", row)


def listed(client, **query: str) -> int:
    """How many sweep failures the changelist lists (its paginator's count)."""
    content = text(client.get(failures_url(), query))
    return int(re.search(r"(\d+) sweep failures?\b", content).group(1))


def test_the_failures_list_filters_by_kind_and_by_state(root_client, set_aside):
    assert listed(root_client) == 1
    assert listed(root_client, kind__exact="deadline") == 1
    assert listed(root_client, kind__exact="schedule") == 0
    assert listed(root_client, state="set-aside") == 1
    assert listed(root_client, state="retrying") == 0


def test_a_failure_still_tried_again_says_when(root_client, removed):
    services.sweep(now=later())

    content = text(root_client.get(failures_url(), {"state": "retrying"}))

    assert listed(root_client, state="retrying") == 1
    assert "Tried again at" in content and "Set aside since" not in content


def test_try_again_lets_the_next_sweep_fire_the_deadline_once_its_cause_is_mended(
        root_client, set_aside, removed):
    response = try_again(root_client, set_aside)

    assert response.status_code == 302
    assert messages_of(response) == ["The sweep tries 1 item again on its next turn."]
    assert not SweepFailure.objects.exists()
    bring_back()
    services.sweep(now=later(2))
    assert WorkflowInstance.objects.get(pk=removed.pk).current_step == "after"


def test_try_again_leaves_out_a_selected_id_no_integer_column_holds(root_client, set_aside):
    response = root_client.post(failures_url(), {
        "action": "try_again", "index": "0", ACTION_CHECKBOX_NAME: ["9" * 30, set_aside.pk]})

    assert messages_of(response) == ["The sweep tries 1 item again on its next turn."]
    assert not SweepFailure.objects.exists()


def test_staff_who_may_only_see_sweep_failures_cannot_try_them_again(set_aside):
    watcher = logged_in(with_permissions("watcher", "view_sweepfailure"))

    content = text(watcher.get(failures_url()))
    response = try_again(watcher, set_aside)

    assert 'value="try_again"' not in content
    assert response.status_code == 200  # the list again: no action it may run was named
    assert "The sweep tries" not in response.content.decode()
    assert SweepFailure.objects.filter(pk=set_aside.pk).exists()


def test_staff_without_permissions_on_sweep_failures_are_refused_the_list(set_aside):
    outsider = logged_in(with_permissions("operator", "view_workflowinstance",
                                          "change_workflowinstance"))

    assert outsider.get(failures_url()).status_code == 403
    assert try_again(outsider, set_aside).status_code == 403
    assert SweepFailure.objects.filter(pk=set_aside.pk).exists()


def test_sweep_failures_cannot_be_added_edited_or_deleted_by_hand(root_client, set_aside):
    change = reverse("admin:django_workflows_sweepfailure_change", args=[set_aside.pk])
    delete = reverse("admin:django_workflows_sweepfailure_delete", args=[set_aside.pk])

    assert root_client.get(reverse("admin:django_workflows_sweepfailure_add")
                           ).status_code == 403
    page = text(root_client.get(change))
    assert ERROR in page and 'name="_save"' not in page
    assert root_client.post(change, {"error": "fixed"}).status_code == 403
    assert root_client.post(delete, {"post": "yes"}).status_code == 403
    assert 'value="delete_selected"' not in text(root_client.get(failures_url()))
    assert SweepFailure.objects.get(pk=set_aside.pk).error == ERROR


# -- the instance's page ----------------------------------------------------------------


def test_the_instance_page_shows_its_sweep_failures_with_a_try_again_button(root_client,
                                                                            set_aside, removed):
    found = sweep_failure_section(text(root_client.get(instance_url(removed))))

    assert "Deadline" in found and ERROR in found
    assert "Set aside since" in found and "2 failures in a row" in found
    assert 'name="_retry_sweep"' in found and 'name="csrfmiddlewaretoken"' in found


def test_try_again_on_the_instance_page_lets_the_sweep_fire_its_deadline(root_client,
                                                                         set_aside, removed):
    response = root_client.post(instance_url(removed), {"_retry_sweep": "1"})

    assert response.status_code == 302 and response["Location"] == instance_url(removed)
    assert messages_of(response) == ["The sweep tries 1 item of this instance again on its "
                                     "next turn."]
    assert not SweepFailure.objects.exists()
    assert "dwf-sweep-failures" not in text(root_client.get(instance_url(removed)))
    bring_back()
    services.sweep(now=later(2))
    assert WorkflowInstance.objects.get(pk=removed.pk).current_step == "after"


def test_try_again_on_an_instance_page_leaves_other_instances_failures(root_client,
                                                                       set_aside, removed):
    with instance_of_a_removed_workflow() as other:
        sweep_until_set_aside(other)

        root_client.post(instance_url(removed), {"_retry_sweep": "1"})

        assert list(SweepFailure.objects.values_list("instance_id", flat=True)) == [other.pk]


def test_a_viewer_sees_the_failures_but_no_button_and_cannot_post_it(set_aside, removed):
    viewer = logged_in(with_permissions("viewer", "view_workflowinstance"))

    found = sweep_failure_section(text(viewer.get(instance_url(removed))))
    response = viewer.post(instance_url(removed), {"_retry_sweep": "1"})

    assert ERROR in found and 'name="_retry_sweep"' not in found
    assert response.status_code == 302
    assert messages_of(response) == ["Not tried again: acting on this instance needs the "
                                     "permission to change workflow instances."]
    assert SweepFailure.objects.filter(pk=set_aside.pk).exists()


def test_an_instance_without_sweep_failures_has_no_such_section(root_client):
    instance = WorkflowInstanceFactory(started=True)

    assert "dwf-sweep-failures" not in text(root_client.get(instance_url(instance)))


def test_the_section_is_drawn_again_with_the_page_s_live_parts(root_client, set_aside, removed):
    live = reverse("admin:django_workflows_workflowinstance_live", args=[removed.pk])

    parts = root_client.get(live, {"revision": 0}).json()["parts"]

    assert ERROR in html.unescape(sweep_failure_section(parts["summary"]))
