"""The task page shows what is being decided, above the form (``Task(show=...)``)."""

from __future__ import annotations

import html
import logging
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from django_workflows import services
from django_workflows.models import WorkflowTask
from tests.factories import UserFactory
from tests.task_shows import claim_at_approval, shown_workflows  # noqa: F401 (a fixture)

from .conftest import logged_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("shown_workflows")]


def manager(name: str = "mo"):
    user = UserFactory(username=name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    return user


def task_page_of(instance) -> str:
    task = WorkflowTask.objects.get(instance=instance, status="open")
    return reverse("admin:django_workflows_workflowtask_change", args=[task.pk])


def shown_rows(page: str) -> list[tuple[str, str]]:
    """(label, text) of each line the page shows above the form."""
    section = re.search(r'<section class="module dwf-task-shows" id="dwf-task-shows">(.*?)'
                        r"</section>", page, re.S)
    assert section, "the page shows nothing of what is decided"
    return [(html.unescape(label), html.unescape(re.sub(r"<[^>]+>", "", value)).strip())
            for label, value in re.findall(r'<th scope="row">(.*?)</th><td>(.*?)</td>',
                                           section.group(1), re.S)]


def test_the_task_page_shows_the_claims_values_above_the_form():
    instance = claim_at_approval(UserFactory(username="ann"))

    page = logged_in(manager()).get(task_page_of(instance)).content.decode()

    assert shown_rows(page) == [
        ("Amount spent", "120.5"), ("Currency", "EUR"),
        ("Description", "Train to Lyon <script>x()</script>"),
        ("Receipt", "https://files.example.com/receipts/1.pdf"),
        ("Iban", "missing: the instance's state has no such value")]
    assert page.index('id="dwf-task-shows"') < page.index('id="dwf-task-form"')


def test_a_value_is_escaped_and_never_markup():
    instance = claim_at_approval(UserFactory(username="ann"))

    page = logged_in(manager()).get(task_page_of(instance)).content.decode()

    assert "<script>x()</script>" not in page
    assert "Train to Lyon &lt;script&gt;x()&lt;/script&gt;" in page


def test_an_https_receipt_is_a_link():
    instance = claim_at_approval(UserFactory(username="ann"))

    page = logged_in(manager()).get(task_page_of(instance)).content.decode()

    assert '<a href="https://files.example.com/receipts/1.pdf" rel="noopener noreferrer"' in page


def test_a_javascript_url_is_text_not_a_link():
    instance = claim_at_approval(UserFactory(username="ann"), receipt="javascript:alert(1)")

    page = logged_in(manager()).get(task_page_of(instance)).content.decode()

    assert ("Receipt", "javascript:alert(1)") in shown_rows(page)
    assert 'href="javascript:' not in page


def test_a_show_hook_that_raises_is_an_error_line_and_is_logged_not_a_500(caplog):
    instance = services.create("shown-hook", owner=UserFactory(username="ann"), start=True,
                               state={"who": "alice", "fail": True})

    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        response = logged_in(manager()).get(task_page_of(instance))

    assert response.status_code == 200
    assert shown_rows(response.content.decode()) == [
        ("Could not be shown", "could not be shown: the task's show failed (the error is in "
                               "the log)")]
    assert 'id="dwf-task-form"' in response.content.decode()  # one may still decide
    (record,) = [r for r in caplog.records if "show" in r.getMessage()]
    assert 'step "review" of workflow "shown-hook"' in record.getMessage()
    assert "the show broke" in str(record.exc_info[1])


def test_a_show_hook_shows_its_pairs():
    instance = services.create("shown-hook", owner=UserFactory(username="ann"), start=True)

    page = logged_in(manager()).get(task_page_of(instance)).content.decode()

    assert shown_rows(page) == [("Who", "alice")]


def test_a_task_without_show_shows_no_section(root_client):
    instance = services.create("approval", owner=UserFactory(username="ann"), start=True)
    instance = services.next(instance)

    page = root_client.get(task_page_of(instance)).content.decode()

    assert 'id="dwf-task-shows"' not in page
