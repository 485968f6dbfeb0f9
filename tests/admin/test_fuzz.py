"""A property-based fuzz of the admin: its changelists' filters and search, and its forms.

Hypothesis sends, with Django's test client as a signed-in superuser: the
instances and events changelists with any filter value and search term; the
add page with any workflow, initial state and start flag; the instance page's
state form and command buttons with any state, revision and command, as a
browser's form or as multipart. States are JSON of every shape, good and bad
(thousands of digits, NaN, 1e999, deep nesting, NUL characters), some of them
over the state limit and over Django's upload limit (both lowered here).

No answer may be a 5xx or Django's bare 400 page, and a form answered again
(200 to a post) must say what is wrong. The test prints how many requests it made.

``DWF_FUZZ_EXAMPLES`` scales it with the API's fuzzes: 3 requests per example
for each of the five pages (default 20: 300 requests).
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from django_workflows.engine import EVENT_TYPES
from django_workflows.models import Status, WorkflowInstance
from django_workflows.services import COMMAND_NAMES as COMMANDS
from tests.factories import UserFactory, WorkflowInstanceFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

EXAMPLES = int(os.environ.get("DWF_FUZZ_EXAMPLES", "20")) * 3

# Workflows whose work is quick: background work runs in process (the immediate runner).
QUICK_WORKFLOWS = ["wizard", "long-manual", "back-office", "parent", "compensated",
                   "guarded-exit", "admin-undo", "admin-guarded", "admin-fragile"]
INSTANCE_FILTERS = ["workflow", "current_step", "status__exact", "owner", "q",
                    "updated_at__year", "updated_at__month", "updated_at__day", "o", "p"]
EVENT_FILTERS = ["type", "q", "o", "p"]
UPLOAD_LIMIT = 8192  # DATA_UPLOAD_MAX_MEMORY_SIZE during the fuzz
STATE_LIMIT = 4096  # MAX_STATE_BYTES during the fuzz


def made_instances(owner: Any) -> list[WorkflowInstance]:
    return [
        WorkflowInstanceFactory(owner=owner),
        WorkflowInstanceFactory(owner=owner, started=True),
        WorkflowInstanceFactory(owner=owner, blocked=True),
        WorkflowInstanceFactory(owner=owner, workflow="long-manual", started=True),
        WorkflowInstanceFactory(owner=owner, workflow="admin-undo", started=True,
                                commands=["next"]),
        WorkflowInstanceFactory(owner=owner, workflow="guarded-exit", started=True),
        WorkflowInstanceFactory(owner=owner, started=True, commands=["cancel"]),
    ]


def says_what_is_wrong(content: str) -> bool:
    """A form's errors, or an error in the page's messages."""
    return bool(re.search(r'class="(errorlist|errornote)', content)
                or re.search(r'<ul class="messagelist">.*?<li class="error">', content, re.S))


def test_fuzzing_the_admin_s_forms_and_filters_finds_no_server_error(settings, capsys):
    import hypothesis
    from hypothesis import strategies as st

    from tests.strategies import json_text, nasty_text

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_LIMIT
    settings.DJANGO_WORKFLOWS = {**django_settings.DJANGO_WORKFLOWS,
                                 "MAX_STATE_BYTES": STATE_LIMIT}
    root = UserFactory(username="fuzzer", superuser=True)
    client = Client(raise_request_exception=False)  # a 500 is counted, not raised
    client.force_login(root)
    instances = made_instances(root)
    ids = [str(instance.pk) for instance in instances]
    steps = sorted({step for instance in instances for step in
                    WorkflowInstance.objects.get(pk=instance.pk).snapshot.get("history", [])}
                   | {"account", "plan", "s1", "draft", "send"})

    made: list[int] = []
    failures: list[str] = []

    def check(method: str, page: str, sent: Any, response: Any) -> None:
        made.append(response.status_code)
        what = f"{method} {page} {str(sent)[:300]}"
        content = response.content.decode(errors="replace")
        if response.status_code >= 500:
            failures.append(f"{response.status_code}: {what}\n{response.exc_info!r}")
        elif response.status_code not in (200, 302):  # e.g. Django's bare 400 page
            failures.append(f"{response.status_code}: {what}\n{content[:200]}")
        elif method == "POST" and response.status_code == 200 and \
                not says_what_is_wrong(content):
            failures.append(f"200 without a message: {what}")

    def post(page: str, data: dict[str, str], as_form: bool) -> None:
        if as_form:  # as a browser posts a form without files
            response = client.post(page, urlencode(data),
                                   content_type="application/x-www-form-urlencoded")
        else:
            response = client.post(page, data)
        check("POST", page, data, response)

    fuzz = hypothesis.settings(max_examples=EXAMPLES, deadline=None, database=None,
                               phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
                               suppress_health_check=list(hypothesis.HealthCheck))
    known = [*QUICK_WORKFLOWS, *steps, *Status.values, *ids, str(root.pk), "me", "none",
             "2024", "12", "31", "-1", "1"]

    @fuzz
    @hypothesis.given(query=st.dictionaries(st.sampled_from(INSTANCE_FILTERS),
                                            nasty_text(*known), max_size=4))
    def instances_changelist(query: dict[str, str]) -> None:
        page = reverse("admin:django_workflows_workflowinstance_changelist")
        check("GET", page, query, client.get(page, query))

    @fuzz
    @hypothesis.given(query=st.dictionaries(st.sampled_from(EVENT_FILTERS),
                                            nasty_text(*EVENT_TYPES, *ids, "1"), max_size=3))
    def events_changelist(query: dict[str, str]) -> None:
        page = reverse("admin:django_workflows_workflowevent_changelist")
        check("GET", page, query, client.get(page, query))

    @fuzz
    @hypothesis.given(workflow=nasty_text(*QUICK_WORKFLOWS), state=json_text(
        object_keys=("email", "plan")), start=st.sampled_from([None, "on", "", "maybe"]),
        as_form=st.booleans())
    def add_page(workflow: str, state: str, start: str | None, as_form: bool) -> None:
        data = {"workflow": workflow, "state": state}
        if start is not None:
            data["start"] = start
        post(reverse("admin:django_workflows_workflowinstance_add"), data, as_form)

    revisions = st.just("current") | st.just("current") | nasty_text()

    def current(instance: WorkflowInstance, revision: str) -> str:
        if revision != "current":
            return revision
        return str(WorkflowInstance.objects.only("revision").get(pk=instance.pk).revision)

    @fuzz
    @hypothesis.given(instance=st.sampled_from(instances),
                      state=json_text(object_keys=("email", "plan")), revision=revisions,
                      as_form=st.booleans())
    def state_form(instance: WorkflowInstance, state: str, revision: str,
                   as_form: bool) -> None:
        page = reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])
        post(page, {"_state": "Save state", "state": state,
                    "revision": current(instance, revision)}, as_form)

    @fuzz
    @hypothesis.given(instance=st.sampled_from(instances), command=nasty_text(*COMMANDS),
                      revision=revisions, as_form=st.booleans())
    def command_buttons(instance: WorkflowInstance, command: str, revision: str,
                        as_form: bool) -> None:
        page = reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])
        post(page, {"_command": command, "revision": current(instance, revision)}, as_form)

    pages = [instances_changelist, events_changelist, add_page, state_form, command_buttons]
    for run in pages:
        run()

    with capsys.disabled():
        print(f"\nfuzz of the admin: {len(made)} requests over {len(pages)} pages "
              f"(changelists, add, state, commands), {sum(s >= 500 for s in made)} server "
              f"errors, {len(failures)} failures; statuses {sorted(set(made))}")
    assert failures == [], "\n\n".join(failures[:8])
