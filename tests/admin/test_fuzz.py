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

A second fuzz lists every page the app's ModelAdmins answer (Django's own and those their
``get_urls()`` add, found through the admin site, not named here), with the admin's
index and the app's, and sends each, as a staff user without permissions and as a
superuser: hostile ids in the path (NUL, huge, unicode, SQL-ish), by GET and by POST;
every query parameter a page may read (the model's fields, its filters, the admin's own
parameters, the few the app's pages read) with a NUL, one at a time, and random mixes
of nasty values; and each bulk action with hostile ids selected. No answer may be a 5xx.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.views.main import ERROR_FLAG, IGNORED_PARAMS, PAGE_VAR
from django.test import Client, RequestFactory
from django.urls import reverse

from django_workflows import Schedule, services
from django_workflows.engine import EVENT_TYPES
from django_workflows.models import (
    Status,
    SweepFailure,
    WorkflowEvent,
    WorkflowInstance,
    WorkflowSchedule,
    WorkflowTask,
)
from django_workflows.services import COMMAND_NAMES as COMMANDS
from django_workflows.services.schedules import sync_schedules
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


# -- every page the app registers ------------------------------------------------------

PATH_PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")
# What the app's own pages read from the query string, besides their changelists' filters.
PAGE_PARAMETERS = ("revision", "period", "events_page")
# Ids a hostile user types into a page's path ({valid}: a row's own id).
HOSTILE_IDS = ("{valid}", "\x00", "{valid}\x00", "a\x00b", "x" * 3000, "9" * 30, "-1", "0",
               "🙂é", "\ud800", "\u202e", "' OR '1'='1' --", "%00", "../x", " ")


@dataclass(frozen=True)
class Page:
    """A page of the admin: its URL with ``{name}`` for each path parameter."""

    url: str
    parameters: tuple[str, ...]
    model_admin: Any = None  # None: the admin's index, or the app's

    @property
    def model(self) -> Any:
        return self.model_admin.model if self.model_admin is not None else None


def app_pages() -> list[Page]:
    """Every page of the app's ModelAdmins (Django's own and those their ``get_urls()``
    adds), found through the admin site, and the admin's index and the app's."""
    config = apps.get_app_config("django_workflows")
    pages = [Page(reverse("admin:index"), ()),
             Page(reverse("admin:app_list", args=[config.label]), ())]
    for model in config.get_models():
        if not admin.site.is_registered(model):
            continue
        model_admin = admin.site.get_model_admin(model)
        # The changelist's route is "": its URL is where the ModelAdmin's URLs are mounted.
        mounted = reverse(f"admin:{config.label}_{model._meta.model_name}_changelist")
        for pattern in model_admin.get_urls():
            route = str(pattern.pattern)
            pages.append(Page(mounted + PATH_PARAMETER.sub(r"{\1}", route),
                              tuple(PATH_PARAMETER.findall(route)), model_admin))
    return pages


def query_names(page: Page) -> list[str]:
    """Every query parameter a page may read: the admin's own, the app's pages', and for a
    model's page its fields and its filters (as Django's filters name them)."""
    names = [*IGNORED_PARAMS, ERROR_FLAG, PAGE_VAR, "_changelist_filters", *PAGE_PARAMETERS]
    if page.model_admin is None:
        return names
    for field in page.model._meta.concrete_fields:
        names += [field.name, field.attname, f"{field.name}__exact",
                  f"{field.name}__startswith"]
    for spec in page.model_admin.list_filter:
        if isinstance(spec, str | tuple):
            path = spec if isinstance(spec, str) else spec[0]
            names += [f"{path}__exact", f"{path}__isnull"]
        else:
            names.append(spec.parameter_name)
    if page.model_admin.date_hierarchy:
        names += [f"{page.model_admin.date_hierarchy}__{part}"
                  for part in ("year", "month", "day")]
    return list(dict.fromkeys(names))


def nul_queries(page: Page, is_changelist: bool) -> list[dict[str, str]]:
    """Each query parameter with a NUL character: one at a time on a changelist (a filter
    refused hides the rest); elsewhere Django's own one at a time (a ``_to_field`` refused
    hides the rest), the page's all together."""
    names = query_names(page)
    if is_changelist:
        return [{name: "a\x00b"} for name in names]
    django_s = [*IGNORED_PARAMS, ERROR_FLAG, PAGE_VAR, "_changelist_filters"]
    return [*({name: "a\x00b"} for name in django_s),
            {name: "a\x00b" for name in names if name not in django_s}]


def in_path(value: str) -> str:
    # A lone surrogate goes as the bytes a careless client sends: invalid UTF-8.
    return quote(value, safe="", errors="surrogatepass")


def test_every_page_the_app_registers_answers_hostile_ids_and_queries_without_a_server_error(
        settings, capsys):
    import hypothesis
    from hypothesis import strategies as st

    from tests.strategies import nasty_text
    from tests.testapp.schedules import registered
    from tests.testapp.sweep_failures import instance_of_a_removed_workflow, later

    root = UserFactory(username="fuzzer", superuser=True)
    nobody = UserFactory(username="no-permissions", is_staff=True)
    clients = {}
    for user in (root, nobody):
        clients[user.username] = Client(raise_request_exception=False)
        clients[user.username].force_login(user)

    made: list[int] = []
    failures: list[str] = []

    def send(who: str, method: str, url: str, data: Any = None) -> None:
        client = clients[who]
        if method == "POST":  # as a browser's form, a lone surrogate as its bytes
            response = client.post(url, urlencode(data or {}, doseq=True,
                                                  errors="surrogatepass"),
                                   content_type="application/x-www-form-urlencoded")
        else:
            response = client.get(url, data)
        made.append(response.status_code)
        if response.status_code >= 500:
            error = response.exc_info[1] if response.exc_info else None
            failures.append(f"{response.status_code} to {who}: {method} {url[:120]} "
                            f"{str(data)[:120]}: {error!r}"[:400])

    with registered(Schedule("fuzzed-schedule", workflow="scheduled-report", every=60)), \
            instance_of_a_removed_workflow():
        sync_schedules()
        services.sweep(now=later())  # a real failure of the sweep: its workflow is gone
        instance = WorkflowInstanceFactory(owner=root, workflow="admin-undated", start=True)
        valid = {WorkflowInstance: str(instance.pk),
                 WorkflowEvent: str(WorkflowEvent.objects.filter(instance=instance).first().pk),
                 WorkflowTask: str(WorkflowTask.objects.get(instance=instance).pk),
                 WorkflowSchedule: "fuzzed-schedule",
                 SweepFailure: str(SweepFailure.objects.get().pk)}
        pages = app_pages()
        assert {page.model for page in pages} >= set(valid), "a registered model is not listed"

        changelists = [page for page in pages if page.model_admin is not None
                       and page.url == reverse(f"admin:{page.model._meta.app_label}_"
                                               f"{page.model._meta.model_name}_changelist")]
        for page in pages:
            for who in clients:
                if page.parameters:
                    known = valid.get(page.model, "wizard")
                    for hostile in HOSTILE_IDS:
                        value = in_path(hostile.format(valid=known))
                        url = page.url.format(**dict.fromkeys(page.parameters, value))
                        send(who, "GET", url)
                        send(who, "POST", url)
                url = page.url.format(**dict.fromkeys(page.parameters,
                                                      valid.get(page.model, "wizard")))
                for query in nul_queries(page, page in changelists):
                    send(who, "GET", url, query)
                for value in ("9" * 5000, "🙂é' OR '1'='1' --"):  # huge; unicode, SQL-ish
                    send(who, "GET", url, dict.fromkeys(query_names(page), value))

        fuzz = hypothesis.settings(max_examples=max(5, EXAMPLES // 6), deadline=None,
                                   database=None, suppress_health_check=list(
                                       hypothesis.HealthCheck),
                                   phases=[hypothesis.Phase.generate])
        for page in changelists:
            names = query_names(page)
            known = [*valid.values(), *Status.values, *EVENT_TYPES, "admin-undated", "decide",
                     "1", "me", "all", "claimed", "True", "False"]

            @fuzz
            @hypothesis.given(who=st.sampled_from(list(clients)),
                              query=st.dictionaries(st.sampled_from(names), nasty_text(*known),
                                                    max_size=4))
            def mixed_queries(who: str, query: dict[str, str]) -> None:
                send(who, "GET", page.url, query)  # noqa: B023 - run before the next page

            mixed_queries()
            # Each bulk action with hostile ids selected (and with a valid one among them).
            request = RequestFactory().get(page.url)
            request.user = root
            for action in page.model_admin.get_actions(request):
                for hostile in HOSTILE_IDS:
                    selected = hostile.format(valid=valid[page.model])
                    send("fuzzer", "POST", page.url, {
                        "action": action, "index": "0",
                        ACTION_CHECKBOX_NAME: [selected, valid[page.model]]})

    with capsys.disabled():
        print(f"\nfuzz of every admin page: {len(made)} requests over {len(pages)} pages, "
              f"{sum(s >= 500 for s in made)} server errors; statuses {sorted(set(made))}")
    assert failures == [], f"{len(failures)} server errors:\n" + "\n".join(failures[:40])
