"""The inbox tells two identical tasks apart: each row names its instance's reference, its
owner and the instance it is part of (alice's onboarding, not the child's id), and the
search finds tasks by any of them."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_workflows.models import WorkflowInstance, WorkflowTask
from tests.factories import UserFactory
from tests.task_shows import claim_at_approval, onboarding_of, shown_workflows  # noqa: F401

from .conftest import instance_url, logged_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("shown_workflows")]

INBOX = "/admin/django_workflows/workflowtask/"


def manager(name: str = "mo"):
    user = UserFactory(username=name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    return user


def rows(page: str) -> list[dict[str, str]]:
    """Each row of the inbox, by column: the text a person reads."""
    body = re.search(r'<table id="result_list">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, "the inbox has no table"
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S):
        cells = re.findall(r'<t[hd] class="field-(\w+)[^"]*"[^>]*>(.*?)</t[hd]>', row, re.S)
        found.append({name: html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
                      for name, text in cells})
    return found


def child_of(root: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(parent=root)


@pytest.fixture
def two_reviews(shown_workflows):  # noqa: F811 (the fixture, first)
    """Alice's and Bob's onboardings, each with an identity check waiting for review."""
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    return onboarding_of(alice, reference="O-ALICE"), onboarding_of(bob)


def test_each_row_names_the_instance_its_owner_and_the_root_it_is_part_of(two_reviews):
    alices, bobs = two_reviews

    found = rows(logged_in(manager()).get(INBOX).content.decode())

    assert sorted((r["task_title"], r["instance_link"], r["owner"], r["root_link"])
                  for r in found) == sorted([
        ("Review a document", child_of(alices).name, "alice", "An onboarding O-ALICE"),
        ("Review a document", child_of(bobs).name, "bob", f"An onboarding {bobs.name}")])


def test_the_root_links_to_the_instance_it_is_part_of(two_reviews):
    alices, _ = two_reviews

    page = logged_in(manager()).get(INBOX).content.decode()

    assert f'<a href="{instance_url(alices)}" class="dwf-task-root">An onboarding O-ALICE</a>' \
        in page


def test_a_task_of_an_instance_that_is_not_nested_names_its_reference_and_owner():
    claim_at_approval(UserFactory(username="ann"), reference="E-2026-0001")

    [row] = rows(logged_in(manager()).get(INBOX).content.decode())

    assert (row["instance_link"], row["owner"], row["root_link"]) == ("E-2026-0001", "ann", "—")


@pytest.mark.parametrize("term", ["O-ALICE", "O-AL", "alice", "ALICE"])
@pytest.mark.usefixtures("two_reviews")
def test_the_search_finds_the_childs_task_by_its_roots_reference_or_owner(term):
    found = rows(logged_in(manager()).get(INBOX, {"q": term}).content.decode())

    assert [r["root_link"] for r in found] == ["An onboarding O-ALICE"]


def test_the_search_finds_a_task_by_its_roots_id_as_the_list_shows_it(two_reviews):
    _, bobs = two_reviews

    found = rows(logged_in(manager()).get(INBOX, {"q": bobs.name}).content.decode())

    assert [r["owner"] for r in found] == ["bob"]


def test_the_search_finds_a_task_by_its_own_instances_reference():
    claim_at_approval(UserFactory(username="ann"), reference="E-2026-0001")
    claim_at_approval(UserFactory(username="ben"), reference="E-2026-0002")

    found = rows(logged_in(manager()).get(INBOX, {"q": "E-2026-0002"}).content.decode())

    assert [(r["instance_link"], r["owner"]) for r in found] == [("E-2026-0002", "ben")]


def test_the_search_never_widens_the_inbox(two_reviews):
    outsider = logged_in(UserFactory(username="sam", is_staff=True))

    page = outsider.get(INBOX, {"q": "alice"}).content.decode()

    assert "Review a document" not in page and "0 tasks" in page


def test_the_task_page_names_the_owner_and_the_root(two_reviews):
    alices, _ = two_reviews
    task = WorkflowTask.objects.get(instance=child_of(alices), status="open")

    page = logged_in(manager()).get(
        reverse("admin:django_workflows_workflowtask_change", args=[task.pk])).content.decode()

    assert re.search(r'id="dwf-task-owner">alice<', page)
    assert re.search(r'id="dwf-task-root"><a href="[^"]+" class="dwf-task-root">An onboarding '
                     r"O-ALICE</a>", page)


def test_the_inbox_reads_a_page_of_nested_tasks_in_a_fixed_number_of_queries(
        two_reviews, django_assert_max_num_queries):
    client = logged_in(manager())
    client.get(INBOX)  # the session, the permissions, cached
    with CaptureQueriesContext(connection) as two:
        client.get(INBOX)
    queries_for_two = len(two)
    for owner in ("carol", "dave", "erin"):
        onboarding_of(UserFactory(username=owner))

    with django_assert_max_num_queries(queries_for_two):
        response = client.get(INBOX)

    assert len(rows(response.content.decode())) == 5
