"""The instances changelist: columns, filters, search, date hierarchy, and its cost."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import TestCase, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_workflows import services
from django_workflows.admin.changelist import EstimatedCountPaginator, estimated_count
from django_workflows.models import WorkflowInstance
from tests import dbutil
from tests.dbutil import column_sql
from tests.factories import UserFactory, WorkflowInstanceFactory

from .conftest import changelist_url, instance_url, logged_in, shown_messages

pytestmark = pytest.mark.django_db


def listed(response) -> list[str]:
    """The instance ids the changelist shows, in order."""
    return re.findall(r'<span class="dwf-id" title="([0-9a-f-]{36})">', response.content.decode())


def analyze() -> None:
    if dbutil.is_postgres():
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE django_workflows_workflowinstance")


def count_limit(limit: int):
    return override_settings(DJANGO_WORKFLOWS={**settings.DJANGO_WORKFLOWS,
                                               "ADMIN_EXACT_COUNT_LIMIT": limit})


# The date hierarchy's links (its nav element).
NAV = r'<nav class="toplinks"[^>]*>(.*?)</nav>'


def age(instance, **delta) -> None:
    WorkflowInstance.objects.filter(pk=instance.pk).update(
        updated_at=timezone.now() - timedelta(**delta))


def test_changelist_shows_workflow_status_badge_step_owner_revision_and_update(root_client):
    owner = UserFactory(username="ann")
    instance = WorkflowInstanceFactory(workflow="admin-fragile", owner=owner)

    response = root_client.get(changelist_url())

    assert response.status_code == 200
    row = re.search(r'<tr>.*?dwf-id.*?</tr>', response.content.decode(), re.S).group(0)
    assert instance_url(instance) in row
    assert "Import a feed" in row
    assert '<span class="dwf-badge dwf-status-idle">Idle</span>' in row
    assert ">ann<" in row
    assert '<td class="field-revision">1</td>' in row
    assert "field-updated_at" in row


def test_changelist_shows_the_current_steps_title(root_client):
    WorkflowInstanceFactory(workflow="admin-undo", started=True)
    WorkflowInstanceFactory(workflow="admin-fragile", started=False)

    response = root_client.get(changelist_url())

    assert '<td class="field-current_step_title">draft</td>' in response.content.decode()


def test_changelist_is_ordered_by_last_update_newest_first(root_client):
    old = WorkflowInstanceFactory()
    new = WorkflowInstanceFactory()
    age(old, days=1)

    assert listed(root_client.get(changelist_url())) == [str(new.pk), str(old.pk)]


def test_changelist_filters_by_workflow(root_client):
    wizard = WorkflowInstanceFactory(workflow="wizard")
    WorkflowInstanceFactory(workflow="admin-undo")

    response = root_client.get(changelist_url(), {"workflow": "wizard"})

    assert listed(response) == [str(wizard.pk)]


def test_workflow_filter_offers_the_registered_workflows(root_client):
    response = root_client.get(changelist_url())

    content = response.content.decode()
    assert "?workflow=admin-fragile" in content
    assert "Import a feed (admin-fragile)" in content


def test_changelist_filters_by_status(root_client):
    running = WorkflowInstanceFactory(started=True)
    WorkflowInstanceFactory()

    response = root_client.get(changelist_url(), {"status__exact": "running"})

    assert listed(response) == [str(running.pk)]


def test_changelist_filters_by_current_step(root_client):
    WorkflowInstanceFactory(workflow="admin-undo", started=True)
    sent = WorkflowInstanceFactory(workflow="admin-undo", started=True, commands=["next"])

    response = root_client.get(changelist_url(), {"workflow": "admin-undo",
                                                 "current_step": "send"})

    assert listed(response) == [str(sent.pk)]


def test_current_step_filter_offers_the_steps_of_the_chosen_workflow(root_client):
    response = root_client.get(changelist_url(), {"workflow": "admin-undo"})

    content = response.content.decode()
    for step in ("draft", "send", "sent"):
        assert f"current_step={step}" in content
    assert "current_step=account" not in content


def test_current_step_filter_waits_for_a_workflow_when_several_are_registered(root_client):
    content = root_client.get(changelist_url()).content.decode()

    assert "current_step=" not in content


def test_changelist_filters_by_owner(root_client):
    ann = UserFactory(username="ann")
    anns = WorkflowInstanceFactory(owner=ann)
    WorkflowInstanceFactory(owner=UserFactory(username="bob"))

    response = root_client.get(changelist_url(), {"owner": str(ann.pk)})

    assert listed(response) == [str(anns.pk)]


def test_owner_filter_finds_my_instances(superuser, root_client):
    mine = WorkflowInstanceFactory(owner=superuser)
    WorkflowInstanceFactory(owner=UserFactory(username="bob"))

    assert listed(root_client.get(changelist_url(), {"owner": "me"})) == [str(mine.pk)]


def test_owner_filter_finds_instances_without_owner(root_client):
    nobodys = WorkflowInstanceFactory()
    WorkflowInstanceFactory(owner=UserFactory(username="bob"))

    assert listed(root_client.get(changelist_url(), {"owner": "none"})) == [str(nobodys.pk)]


def test_owner_filter_lists_users_by_name(root_client):
    UserFactory(username="carol")

    assert "?owner=" in root_client.get(changelist_url()).content.decode()
    assert ">carol</a>" in root_client.get(changelist_url()).content.decode()


def test_owner_filter_with_a_bad_value_is_reported_not_a_500(root_client):
    response = root_client.get(changelist_url(), {"owner": "not-a-number"})

    assert response.status_code == 302
    assert "e=1" in response["Location"]


def test_owner_filter_with_a_number_too_big_for_the_column_is_reported_not_a_500(root_client):
    response = root_client.get(changelist_url(), {"owner": "9" * 20})

    assert response.status_code == 302
    assert "e=1" in response["Location"]


def test_search_by_instance_id_finds_that_instance(root_client):
    wanted = WorkflowInstanceFactory()
    WorkflowInstanceFactory()

    assert listed(root_client.get(changelist_url(), {"q": str(wanted.pk)})) == [str(wanted.pk)]


def test_search_by_owner_name_finds_their_instances(root_client):
    anns = WorkflowInstanceFactory(owner=UserFactory(username="ann.smith"))
    WorkflowInstanceFactory(owner=UserFactory(username="bob"))

    assert listed(root_client.get(changelist_url(), {"q": "smith"})) == [str(anns.pk)]


def test_search_by_owner_email_finds_their_instances(root_client):
    anns = WorkflowInstanceFactory(owner=UserFactory(username="ann", email="ann@corp.example"))
    WorkflowInstanceFactory(owner=UserFactory(username="bob"))

    assert listed(root_client.get(changelist_url(), {"q": "corp.example"})) == [str(anns.pk)]


def test_date_hierarchy_offers_each_year_between_the_first_and_last_update(root_client):
    WorkflowInstanceFactory()
    old = WorkflowInstanceFactory()
    age(old, days=800)
    this_year = timezone.localtime().year
    old_year = (timezone.localtime() - timedelta(days=800)).year

    content = root_client.get(changelist_url()).content.decode()

    nav = re.search(NAV, content, re.S).group(1)
    years = [int(year) for year in re.findall(r"updated_at__year=(\d+)", nav)]
    assert years == list(range(old_year, this_year + 1))


def test_date_hierarchy_is_labelled_with_the_field_it_filters_by(root_client):
    WorkflowInstanceFactory()

    content = root_client.get(changelist_url()).content.decode()

    label = re.search(r'<nav class="toplinks" aria-labelledby="([^"]+)">', content).group(1)
    assert re.search(rf'<span id="{label}">Filter by updated</span>', content)


def test_date_hierarchy_drills_into_a_year_and_filters_by_it(root_client):
    WorkflowInstanceFactory()
    old = WorkflowInstanceFactory()
    age(old, days=800)
    year = (timezone.localtime() - timedelta(days=800)).year

    response = root_client.get(changelist_url(), {"updated_at__year": str(year)})

    assert listed(response) == [str(old.pk)]
    nav = re.search(NAV, response.content.decode(), re.S)
    assert f"updated_at__year={year}" in nav.group(1)
    assert "updated_at__month=" in nav.group(1)


def test_date_hierarchy_of_one_day_lists_that_day(root_client):
    WorkflowInstanceFactory()

    content = root_client.get(changelist_url()).content.decode()

    today = timezone.localtime()
    nav = re.search(NAV, content, re.S).group(1)
    assert f"updated_at__day={today.day}" in nav


@pytest.mark.parametrize("last", [{"updated_at__year": "9999"},
                                  {"updated_at__year": "9999", "updated_at__month": "12"},
                                  {"updated_at__year": "9999", "updated_at__month": "12",
                                   "updated_at__day": "31"}])
def test_date_hierarchy_at_the_last_representable_date_is_reported_not_a_500(root_client, last):
    response = root_client.get(changelist_url(), last)

    assert response.status_code == 302
    assert "e=1" in response["Location"]


def test_changelist_never_counts_the_whole_table(root_client):
    for _ in range(3):
        WorkflowInstanceFactory()

    with CaptureQueriesContext(connection) as queries:
        root_client.get(changelist_url(), {"status__exact": "idle"})

    counts = [q["sql"] for q in queries if "COUNT(" in q["sql"].upper()]
    assert counts and all("LIMIT" in sql.upper() for sql in counts)
    assert not [q["sql"] for q in queries if "DISTINCT" in q["sql"].upper()]


def test_changelist_does_not_read_states_or_snapshots(root_client):
    WorkflowInstanceFactory(state={"email": "x" * 150, "plan": None})

    with CaptureQueriesContext(connection) as queries:
        root_client.get(changelist_url())

    rows = [q["sql"] for q in queries if q["sql"].startswith("SELECT")
            and column_sql(WorkflowInstance, "workflow") in q["sql"]]
    assert rows
    assert not [sql for sql in rows if column_sql(WorkflowInstance, "state") in sql
                or column_sql(WorkflowInstance, "snapshot") in sql]


def test_changelist_reads_owners_with_their_instances(root_client):
    WorkflowInstanceFactory(owner=UserFactory(username="u0"))
    with CaptureQueriesContext(connection) as few:
        root_client.get(changelist_url())
    for index in range(1, 8):
        WorkflowInstanceFactory(owner=UserFactory(username=f"u{index}"))

    with CaptureQueriesContext(connection) as many:
        root_client.get(changelist_url())

    assert len(many) == len(few)


def test_paginator_counts_exactly_up_to_its_limit():
    for _ in range(3):
        WorkflowInstanceFactory()

    paginator = EstimatedCountPaginator(WorkflowInstance.objects.order_by("pk"), 2)

    assert (paginator.count, paginator.num_pages, paginator.estimated) == (3, 2, False)


@pytest.mark.postgres
def test_paginator_estimates_past_its_limit_on_postgresql():
    for _ in range(6):
        WorkflowInstanceFactory()
    analyze()

    with count_limit(2):
        paginator = EstimatedCountPaginator(WorkflowInstance.objects.order_by("pk"), 2)
        count = paginator.count

    assert count >= 3 and paginator.estimated


@pytest.mark.postgres
def test_paginator_estimates_a_filtered_selection_from_the_query_plan():
    for _ in range(4):
        WorkflowInstanceFactory()
    analyze()

    with count_limit(2):
        paginator = EstimatedCountPaginator(
            WorkflowInstance.objects.filter(status="idle").order_by("pk"), 2)
        count = paginator.count

    assert count >= 3 and paginator.estimated


def test_paginator_counts_everything_when_the_database_has_no_estimate():
    for _ in range(4):
        WorkflowInstanceFactory()
    queryset = WorkflowInstance.objects.order_by("pk")

    with count_limit(2):
        paginator = EstimatedCountPaginator(queryset, 2)
        count = paginator.count

    if estimated_count(queryset) is None:  # SQLite; a PostgreSQL table never analyzed
        assert (count, paginator.estimated) == (4, False)
    else:
        assert paginator.estimated


def test_estimated_count_is_labelled_as_such(root_client):
    for _ in range(4):
        WorkflowInstanceFactory()
    analyze()

    with count_limit(2):
        content = root_client.get(changelist_url()).content.decode()

    if dbutil.is_postgres():
        assert 'class="dwf-estimate"' in content
    else:
        assert "4 workflow instances" in content and "dwf-estimate" not in content


def test_changelist_sorts_only_by_the_indexed_update_time(root_client):
    WorkflowInstanceFactory()

    content = root_client.get(changelist_url()).content.decode()

    assert re.findall(r'<th scope="col" class="sortable[^"]*column-(\w+)', content) == [
        "updated_at"]


def test_changelist_of_staff_with_view_permission_only_has_no_actions(viewer):
    WorkflowInstanceFactory()

    response = logged_in(viewer).get(changelist_url())

    assert response.status_code == 200
    assert 'name="action"' not in response.content.decode()


def test_changelist_of_staff_with_change_permission_offers_the_commands(operator):
    WorkflowInstanceFactory()

    content = logged_in(operator).get(changelist_url()).content.decode()

    for name in ("start", "next", "back", "skip", "retry", "cancel", "rollback"):
        assert f'value="{name}_selected"' in content


def test_changelist_is_forbidden_to_staff_without_permissions(outsider):
    assert logged_in(outsider).get(changelist_url()).status_code == 403


def test_changelist_sends_anonymous_users_to_the_login_page(client):
    response = client.get(changelist_url())

    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_changelist_links_to_the_definitions_page(root_client):
    content = root_client.get(changelist_url()).content.decode()

    assert '/admin/django_workflows/workflowinstance/definitions/">Definitions</a>' in content



# -- values the database cannot hold ------------------------------------------------------


@pytest.mark.parametrize("query", [
    {"workflow": "wiz\x00ard"}, {"current_step": "\x00"}, {"status__exact": "run\x00ning"},
    {"workflow": "wizard", "current_step": "acc\x00ount"}, {"owner": "1\x00"},
])
def test_a_filter_value_with_a_nul_character_is_reported_not_a_500(root_client, query):
    WorkflowInstanceFactory(started=True)

    response = root_client.get(changelist_url(), query)

    assert response.status_code == 302
    assert "e=1" in response["Location"]


def test_a_filter_value_with_a_nul_character_is_explained_on_the_next_page(root_client):
    response = root_client.get(changelist_url(), {"workflow": "wiz\x00ard"}, follow=True)

    assert response.status_code == 200
    assert shown_messages(response) == [
        ("error", "The filter workflow cannot hold NUL characters; the list is shown "
                  "unfiltered.")]


def test_a_filter_naming_no_workflow_lists_nothing(root_client):
    WorkflowInstanceFactory()

    response = root_client.get(changelist_url(), {"workflow": "no-such-workflow"})

    assert response.status_code == 200
    assert listed(response) == []


def test_a_status_filter_naming_no_status_lists_nothing_as_djangos_own_does(root_client):
    WorkflowInstanceFactory()

    response = root_client.get(changelist_url(), {"status__exact": "bogus"})

    assert response.status_code == 200
    assert listed(response) == []


def test_a_search_with_a_nul_character_is_refused_with_djangos_message_not_a_500(root_client):
    WorkflowInstanceFactory(owner=UserFactory(username="ann"))

    response = root_client.get(changelist_url(), {"q": "an\x00n"})

    # Django's own search form refuses it, says so, and lists without searching.
    assert response.status_code == 200
    assert "Null characters are not allowed." in response.content.decode()


def test_the_reference_is_a_column_and_the_search_finds_it_or_its_start(root_client):
    order = services.create("wizard", reference="ORDER-2024-17")
    services.create("wizard", reference="OTHER-1")

    exact = root_client.get(changelist_url(), {"q": "ORDER-2024-17"})
    start = root_client.get(changelist_url(), {"q": "ORDER-2024"})

    assert listed(exact) == [str(order.pk)] and listed(start) == [str(order.pk)]
    assert "ORDER-2024-17" in exact.content.decode()


def test_the_search_finds_an_instance_by_the_short_id_the_list_shows(root_client):
    instance = WorkflowInstanceFactory()
    WorkflowInstanceFactory()

    response = root_client.get(changelist_url(), {"q": str(instance.pk)[:8]})

    assert listed(response) == [str(instance.pk)]


@pytest.mark.parametrize("pasted", ["{short}…", "  {short}…  ", "{short}...", "{short} … "])
def test_the_short_id_pasted_with_its_ellipsis_finds_that_instance(root_client, pasted):
    instance = WorkflowInstanceFactory()
    WorkflowInstanceFactory()

    response = root_client.get(changelist_url(),
                               {"q": pasted.format(short=str(instance.pk)[:8])})

    assert listed(response) == [str(instance.pk)]


@pytest.mark.parametrize("term", ["Expense claim", "expense CLAIM", "xpense cl"])
def test_a_workflows_title_or_part_of_it_finds_its_instances_in_any_case(root_client, term):
    claim = WorkflowInstanceFactory(workflow="admin-claim")
    WorkflowInstanceFactory(workflow="wizard")

    assert listed(root_client.get(changelist_url(), {"q": term})) == [str(claim.pk)]


def test_the_search_by_title_asks_for_the_workflow_ids_not_a_match_in_the_table(root_client):
    WorkflowInstanceFactory(workflow="admin-claim")

    with CaptureQueriesContext(connection) as queries:
        root_client.get(changelist_url(), {"q": "Expense claim"})

    column = column_sql(WorkflowInstance, "workflow")
    searched = [q["sql"] for q in queries if "admin-claim" in q["sql"]]
    assert searched and all(f"{column} IN (" in sql for sql in searched)
    assert not [q["sql"] for q in queries if f"{column} LIKE" in q["sql"]]


def test_the_search_box_says_what_it_finds(root_client):
    help_text = root_client.get(changelist_url()).content.decode()

    assert "as the list shows it (paste it, ellipsis and all)" in help_text
    assert "part of a workflow&#x27;s title" in help_text


def test_a_rolled_back_instance_says_so_until_it_starts_again(root_client):
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True, commands=["next"])
    with TestCase.captureOnCommitCallbacks(execute=True):
        services.rollback(instance)

    row = re.search(r'<tr>.*?dwf-id.*?</tr>', root_client.get(changelist_url()).content.decode(),
                    re.S).group(0)
    assert "Rolled back" in row
    services.start(instance)
    row = re.search(r'<tr>.*?dwf-id.*?</tr>', root_client.get(changelist_url()).content.decode(),
                    re.S).group(0)
    assert "Rolled back" not in row
