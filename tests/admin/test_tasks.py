"""The task inbox and the task page: deciding through a real form, never raw JSON."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from django_workflows import services
from django_workflows.models import WorkflowInstance, WorkflowTask
from tests.factories import UserFactory

from .conftest import instance_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db

INBOX = "/admin/django_workflows/workflowtask/"


def staff_member(name: str, group: str = "managers"):
    user = UserFactory(username=name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def claim(db):
    ann = UserFactory(username="ann")
    instance = services.create("approval", owner=ann, start=True, reference="EXP-7")
    return services.next(instance, user=ann)


def task_page(claim) -> str:
    return reverse("admin:django_workflows_workflowtask_change",
                   args=[WorkflowTask.objects.get(instance=claim).pk])


def text_of(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def test_the_inbox_lists_what_the_manager_may_act_on(claim):
    page = text_of(logged_in(staff_member("mo")).get(INBOX))

    assert "Manager's decision" in page
    assert "EXP-7" in page and "decision" in page
    assert "A claim a manager decides" in page  # the workflow's title


def test_the_inbox_of_someone_who_is_no_candidate_is_empty(claim):
    page = text_of(logged_in(UserFactory(username="sam", is_staff=True)).get(INBOX))

    assert "Manager's decision" not in page


def test_the_admin_index_shows_how_many_tasks_wait(claim):
    page = logged_in(staff_member("mo")).get("/admin/").content.decode()

    assert re.search(r'id="dwf-inbox-count">1<', page)
    assert f'href="{INBOX}"' in page


def test_the_task_page_shows_a_real_form_from_the_schema(claim):
    page = logged_in(staff_member("mo")).get(task_page(claim)).content.decode()

    assert re.search(r'<select name="decision"[^>]*>', page)
    assert '<option value="approved">approved</option>' in page
    assert re.search(r'<input type="text" name="comment"[^>]*maxlength="500"', page) or \
        re.search(r'<textarea name="comment"', page)
    assert 'id="dwf-claim"' in page


def test_a_bad_value_is_shown_beside_its_field_and_nothing_changes(claim):
    client = logged_in(staff_member("mo"))

    response = client.post(task_page(claim), {"_task": "complete", "decision": "maybe",
                                              "revision": claim.revision})

    assert response.status_code == 200
    page = response.content.decode()
    row = re.search(r'<div class="form-row field-decision errors">(.*?)</div>', page, re.S)
    assert row is not None and "Select a valid choice" in row.group(1)
    assert WorkflowTask.objects.get(instance=claim).status == "open"


def test_a_good_decision_completes_the_task_and_moves_the_instance_on(claim):
    mo = staff_member("mo")
    client = logged_in(mo)

    response = client.post(task_page(claim), {"_task": "complete", "decision": "approved",
                                              "comment": "Fine", "revision": claim.revision})

    assert response.status_code == 302
    task = WorkflowTask.objects.get(instance=claim)
    assert (task.status, task.completed_by, task.input) == (
        "done", mo, {"decision": "approved", "comment": "Fine"})
    assert WorkflowInstance.objects.get(pk=claim.pk).current_step == "paid"


def test_claim_and_release_from_the_task_page(claim):
    mo = staff_member("mo")
    client = logged_in(mo)

    client.post(task_page(claim), {"_task": "claim", "revision": claim.revision})
    assert WorkflowTask.objects.get(instance=claim).claimed_by == mo
    assert 'id="dwf-release"' in client.get(task_page(claim)).content.decode()
    client.post(task_page(claim), {"_task": "release"})

    assert WorkflowTask.objects.get(instance=claim).claimed_by is None


def test_a_task_claimed_by_someone_else_has_no_form_and_says_why(claim):
    logged_in(staff_member("mo")).post(task_page(claim), {"_task": "claim"})

    page = text_of(logged_in(staff_member("max")).get(task_page(claim)))

    assert 'id="dwf-task-form"' not in page
    assert "claimed by someone else" in page


def test_the_claimant_gets_no_form_for_their_own_claim(claim):
    claim.owner.is_staff = True
    claim.owner.save()
    claim.owner.groups.add(Group.objects.get_or_create(name="managers")[0])

    page = logged_in(claim.owner).get(task_page(claim)).content.decode()

    assert 'id="dwf-task-form"' not in page


def test_the_instance_page_shows_who_decided_and_when(claim):
    mo = staff_member("mo")
    services.complete(claim, input={"decision": "approved"}, user=mo)

    page = text_of(logged_in(UserFactory(username="root", superuser=True)).get(
        instance_url(claim)))

    assert re.search(r'class="dwf-decided-by">mo<', page)
    assert "EXP-7" in page  # its reference, in the title


def test_a_task_page_of_a_task_one_may_not_see_redirects_with_a_message(claim):
    client = logged_in(UserFactory(username="sam", is_staff=True))

    response = client.get(task_page(claim), follow=True)

    assert any("no such task" in text for _, text in shown_messages(response))
