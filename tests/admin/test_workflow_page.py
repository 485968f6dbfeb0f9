"""A workflow's page: its instances by step and status now, how long they stayed in each
step over a period, its failures by step, and links to the filtered changelist."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_workflows import registry, services
from django_workflows.admin import workflow_page
from django_workflows.engine import Step, Transition, Workflow
from django_workflows.models import WorkflowInstance

from .conftest import logged_in

pytestmark = pytest.mark.django_db

NOON = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
HOUR, DAY = 3600, 86400
TIMES = "\N{MULTIPLICATION SIGN}"


def _check(ctx):
    if ctx.state.get("bad"):
        raise RuntimeError(f"Address unknown: {ctx.state['bad']}")


PARCEL = Workflow(
    id="page-parcel", version=1, title="Send a parcel", initial={"bad": None},
    steps=[Step("pack", title="Pack it"), Step("check", title="Check the address", enter=_check),
           Step("insure", title="Insure it", when=lambda ctx: ctx.state.get("insure")),
           Step("ship", title="Ship it")],
    transitions=[Transition("pack", "check"), Transition("check", "insure"),
                 Transition("insure", "ship")],
)


# Another workflow with a step of the same id: "pack".
GIFTS = Workflow(id="page-gifts", version=1, title="Wrap gifts",
                 steps=[Step("pack", title="Pack the gifts"), Step("give")],
                 transitions=[Transition("pack", "give")])


@pytest.fixture(autouse=True)
def parcel():
    registry.register(PARCEL, origin="tests.admin.test_workflow_page")
    yield
    registry.unregister(PARCEL.id)


@pytest.fixture
def gifts():
    registry.register(GIFTS, origin="tests.admin.test_workflow_page")
    yield
    registry.unregister(GIFTS.id)


def gifts_packed_after(clock: Clock, seconds: float) -> WorkflowInstance:
    instance = services.create("page-gifts", start=True)
    clock.advance(seconds)
    return services.next(instance)


class Clock:
    """The time rows and events are stamped with (``timezone.now``), moved by hand."""

    def __init__(self) -> None:
        self.at = NOON

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def moved_by_hand(monkeypatch) -> Clock:
    """Rows, events and the page read the time from a clock that moves when told."""
    fake = Clock()
    monkeypatch.setattr(timezone, "now", fake.now)
    return fake


@pytest.fixture
def clock(monkeypatch):
    return moved_by_hand(monkeypatch)


def page_url(workflow: str = "page-parcel", **query: str) -> str:
    url = reverse("admin:django_workflows_workflowinstance_workflow", args=[workflow])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def packed_after(clock: Clock, seconds: float, bad: str | None = None,
                 insure: bool = False) -> WorkflowInstance:
    """An instance that stayed ``seconds`` in "pack", then went on to "check"."""
    instance = services.create("page-parcel", state={"bad": bad, "insure": insure},
                               start=True)
    clock.advance(seconds)
    return services.next(instance)


def text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def step_row(content: str, step: str) -> dict[str, str]:
    row = re.search(rf'<tr data-step="{step}">(.*?)</tr>', content, re.S).group(1)
    cells = dict(re.findall(r'<td class="dwf-step-([a-z0-9]+)">(.*?)</td>', row, re.S))
    return {name: text(value) for name, value in cells.items()}


def badges(content: str, step: str) -> list[str]:
    """The counts the diagram draws in a step's box."""
    box = re.search(rf'<g class="dwf-step[^"]*" data-step="{step}".*?</g></a>', content,
                    re.S).group(0)
    return re.findall(r'<g class="dwf-count" data-kind="[^"]+"><title>[^<]*</title>'
                      r'<rect[^>]*/><text[^>]*>([^<]*)</text>', box)


def test_diagram_counts_each_steps_instances_now_by_status(root_client, clock):
    for _ in range(3):
        services.create("page-parcel", start=True)  # running at pack
    packed_after(clock, 60)  # running at check
    packed_after(clock, 60, bad="Nowhere 1")  # failed at check
    services.create("page-parcel")  # idle: at no step

    content = root_client.get(page_url()).content.decode()

    assert badges(content, "pack") == ["3 running"]
    assert badges(content, "check") == ["1 running", "1 failed"]
    assert badges(content, "ship") == []
    assert step_row(content, "check")["now"] == "1 running 1 failed"
    now = text(re.search(r'<p id="dwf-workflow-now".*?</p>', content, re.S).group(0))
    assert now == "Now: 1 idle 4 running 1 failed"


def test_counts_past_the_exact_limit_are_estimated_or_said_to_be_more(root_client, clock,
                                                                      monkeypatch):
    monkeypatch.setattr(workflow_page, "EXACT_COUNT_LIMIT", 2)
    for _ in range(3):
        services.create("page-parcel", start=True)

    shown = badges(root_client.get(page_url()).content.decode(), "pack")

    if connection.vendor == "postgresql":  # its planner's estimate, never less than counted
        assert re.fullmatch(r"≈(\d+) running", shown[0])
        assert int(shown[0][1:].split()[0]) >= 3
    else:
        assert shown == ["more than 2 running"]


def test_each_step_opens_the_changelist_filtered_to_it(root_client, clock):
    services.create("page-parcel", start=True)
    changelist = reverse("admin:django_workflows_workflowinstance_changelist")

    content = root_client.get(page_url()).content.decode()

    link = re.search(r'<a class="dwf-step-link" href="([^"]+)"><g class="dwf-step[^"]*" '
                     r'data-step="pack"', content).group(1)
    assert html.unescape(link) == f"{changelist}?workflow=page-parcel&current_step=pack"
    listed = root_client.get(html.unescape(link))
    assert listed.status_code == 200
    assert listed.context["cl"].result_count == 1


def test_median_and_95th_percentile_of_the_stays_in_a_step(root_client, clock):
    for minutes in (1, 2, 3, 4, 10):  # five stays in "pack"
        packed_after(clock, minutes * 60)

    row = step_row(root_client.get(page_url()).content.decode(), "pack")

    assert row["stays"] == "5"
    assert row["median"] == "3.0 min"
    assert row["p95"] == "10.0 min"
    assert row["median"] != "—"


def test_a_skipped_stay_counts(root_client, clock):
    instance = services.create("page-parcel", start=True)
    clock.advance(90)
    services.skip(instance)  # pack: a stay of 90 s, skipped

    row = step_row(root_client.get(page_url()).content.decode(), "pack")

    assert (row["stays"], row["median"]) == ("1", "1.5 min")


def test_a_step_skipped_as_unavailable_was_no_stay(root_client, clock):
    instance = packed_after(clock, 10, insure=True)
    instance = services.next(instance)  # insured
    clock.advance(600)
    instance = services.back(instance)  # the stay in insure ended by going back
    instance = services.update_state(instance, {"bad": None, "insure": False})
    services.next(instance)  # insure is unavailable now: skipped, never entered

    row = step_row(root_client.get(page_url()).content.decode(), "insure")

    assert (row["stays"], row["median"]) == ("—", "—")


def test_stays_count_only_when_they_ended_in_the_period(root_client, clock):
    packed_after(clock, 2 * HOUR)
    clock.advance(2 * DAY)
    packed_after(clock, 30)

    content = root_client.get(page_url(period="24h")).content.decode()
    assert step_row(content, "pack")["stays"] == "1"
    assert step_row(content, "pack")["median"] == "30 s"
    week = step_row(root_client.get(page_url(period="7d")).content.decode(), "pack")
    assert (week["stays"], week["p95"]) == ("2", "2.0 h")


def test_a_step_still_in_progress_has_no_stay_yet(root_client, clock):
    services.create("page-parcel", start=True)
    clock.advance(60)

    row = step_row(root_client.get(page_url()).content.decode(), "pack")

    assert (row["stays"], row["median"], row["p95"]) == ("—", "—", "—")


def test_a_step_id_another_workflow_has_too_shows_this_workflows_stays_only(
        root_client, clock, gifts):
    packed_after(clock, 60)
    gifts_packed_after(clock, 600)

    row = step_row(root_client.get(page_url()).content.decode(), "pack")

    assert (row["stays"], row["median"]) == ("1", "1.0 min")


def test_a_shared_step_ids_stays_are_looked_for_among_its_newest_events(
        root_client, clock, gifts, monkeypatch):
    packed_after(clock, 60)
    for _ in range(2):
        gifts_packed_after(clock, 600)  # newer stays in a "pack" of the other workflow

    monkeypatch.setattr(workflow_page, "SHARED_STEP_READ", 2)
    beyond = step_row(root_client.get(page_url()).content.decode(), "pack")
    monkeypatch.setattr(workflow_page, "SHARED_STEP_READ", 3)
    within = step_row(root_client.get(page_url()).content.decode(), "pack")

    assert beyond["stays"] == "—"
    assert (within["stays"], within["median"]) == ("1", "1.0 min")


def test_failures_by_step_with_their_most_common_errors(root_client, clock):
    for address in ("Mars", "Nowhere 1", "Nowhere 1", "Atlantis", "Nowhere 1", "Atlantis"):
        packed_after(clock, 10, bad=address)
    clock.advance(8 * DAY)
    packed_after(clock, 10, bad="Pluto")  # the only one of the last 24 hours

    content = root_client.get(page_url(period="30d")).content.decode()

    row = step_row(content, "check")
    assert row["failures"] == "7"
    assert row["errors"] == (f"3 {TIMES} Address unknown: Nowhere 1 2 {TIMES} Address unknown: "
                             f"Atlantis 1 {TIMES} Address unknown: Pluto")  # of equals, the newest
    assert step_row(content, "pack")["failures"] == "0"
    day = step_row(root_client.get(page_url(period="24h")).content.decode(), "check")
    assert (day["failures"], day["errors"]) == ("1", f"1 {TIMES} Address unknown: Pluto")


def test_an_operation_that_fails_its_instance_is_one_failure(
        root_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        services.create("admin-fragile", start=True)  # its download fails the first time

    row = step_row(root_client.get(page_url("admin-fragile")).content.decode(), "fetch")

    assert row["failures"] == "1"
    assert row["errors"].startswith(f"1 {TIMES} ")


def test_the_page_asks_as_many_queries_for_many_instances_as_for_few(root_client, clock):
    def queries() -> int:
        with CaptureQueriesContext(connection) as asked:
            assert root_client.get(page_url()).status_code == 200
        return len(asked.captured_queries)

    packed_after(clock, 10)
    packed_after(clock, 10, bad="Nowhere")
    few = queries()
    for n in range(20):
        packed_after(clock, 10 + n, bad="Nowhere" if n % 2 else None)

    assert queries() == few


def test_a_bad_period_is_refused_with_a_clear_message(root_client, clock):
    response = root_client.get(page_url(period="forever"))

    assert response.status_code == 400
    problem = text(re.search(r'<li class="error" id="dwf-period-problem">(.*?)</li>',
                             response.content.decode(), re.S).group(1))
    assert problem == ("Unknown period 'forever': choose one of 24h, 7d, 30d. "
                       "Showing the last 7 days.")


def test_an_empty_period_is_the_default_one(root_client, clock):
    response = root_client.get(page_url(period=""))

    assert response.status_code == 200
    assert "<strong>last 7 days</strong>" in response.content.decode()


def test_a_period_of_nul_characters_is_refused_too(root_client, clock):
    assert root_client.get(page_url(period="%00%00")).status_code == 400


def test_the_periods_link_to_the_same_page(root_client, clock):
    content = root_client.get(page_url(period="30d")).content.decode()

    periods = re.search(r'<nav class="dwf-periods".*?</nav>', content, re.S).group(0)
    assert re.findall(r'href="\?period=(\w+)"', periods) == ["24h", "7d"]
    assert "<strong>last 30 days</strong>" in periods


def test_an_unknown_workflow_is_not_found(root_client):
    assert root_client.get(page_url("no-such-workflow")).status_code == 404


def test_staff_who_may_view_instances_see_the_page(viewer):
    assert logged_in(viewer).get(page_url()).status_code == 200


def test_staff_without_the_view_permission_are_refused(outsider):
    assert logged_in(outsider).get(page_url()).status_code == 403


def test_anonymous_visitors_are_sent_to_the_login(client):
    response = client.get(page_url())

    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_the_definitions_page_links_to_each_workflows_page(root_client):
    content = root_client.get(
        reverse("admin:django_workflows_workflowinstance_definitions")).content.decode()

    row = re.search(r'<tr data-workflow="page-parcel">(.*?)</tr>', content, re.S).group(1)
    assert f'href="{page_url()}"' in row


def test_the_changelist_filtered_by_a_workflow_links_to_its_page(root_client):
    changelist = reverse("admin:django_workflows_workflowinstance_changelist")

    filtered = root_client.get(changelist + "?workflow=page-parcel").content.decode()
    unfiltered = root_client.get(changelist).content.decode()
    unknown = root_client.get(changelist + "?workflow=nothing").content.decode()

    assert f'id="dwf-workflow-page-link" href="{page_url()}"' in filtered
    assert 'id="dwf-workflow-page-link"' not in unfiltered
    assert 'id="dwf-workflow-page-link"' not in unknown


def test_an_instances_page_links_to_its_workflows_page(root_client):
    instance = services.create("page-parcel")

    content = root_client.get(reverse("admin:django_workflows_workflowinstance_change",
                                      args=[instance.pk])).content.decode()

    assert f'id="dwf-workflow-page-link" href="{page_url()}"' in content
