"""The /metrics view after a known set of commands and attempts, scraped and read as
Prometheus reads it (the immediate runner runs the attempts in this process, after each
command's commit)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

pytest.importorskip("prometheus_client")

from django_workflows import services
from django_workflows.clock import now_datetime
from django_workflows.engine import AttemptOutcome
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import Attempt
from django_workflows.observability.gauges import table_gauges
from django_workflows.services.sweep import hold_lease
from tests.observability.conftest import TOKEN
from tests.observability.scrape import grew, scrape, value

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.urls("tests.observability.urls"),
              pytest.mark.usefixtures("metrics_on")]

ORDER = {"workflow": "obs-order"}


def test_a_scrape_counts_each_command_by_its_outcome_and_refusal_code(client: Any) -> None:
    before = scrape(client, TOKEN)
    paid = services.create("obs-order", start=True)
    declined = services.create("obs-order", state={"decline": True}, start=True)
    services.next(paid)
    with pytest.raises(WorkflowNotMoved):
        services.next(declined)  # its payment failed: the instance is failed, not running
    after = scrape(client, TOKEN)

    counted = "django_workflows_commands_total"
    assert grew(before, after, counted, **ORDER, command="start", outcome="moved", code="") == 2
    assert grew(before, after, counted, **ORDER, command="next", outcome="moved", code="") == 1
    assert grew(before, after, counted, **ORDER, command="next", outcome="refused",
                code="not_running") == 1
    # Each attempt's result is a unit of work too.
    assert grew(before, after, counted, **ORDER, command="attempt_finished", outcome="moved",
                code="") == 4
    assert grew(before, after, "django_workflows_command_duration_seconds_count", **ORDER,
                command="next") == 2
    assert grew(before, after, "django_workflows_lock_held_seconds_count", **ORDER,
                command="next") == 2


def test_a_scrape_counts_attempts_by_operation_and_outcome_with_their_times(client: Any
                                                                           ) -> None:
    before = scrape(client, TOKEN)
    services.create("obs-order", start=True)
    services.create("obs-order", state={"decline": True}, start=True)
    after = scrape(client, TOKEN)

    attempts = "django_workflows_attempts_total"
    assert grew(before, after, attempts, **ORDER, operation="reserve-stock",
                outcome="succeeded") == 2
    assert grew(before, after, attempts, **ORDER, operation="charge", outcome="succeeded") == 1
    assert grew(before, after, attempts, **ORDER, operation="charge", outcome="failed") == 1
    assert grew(before, after, "django_workflows_attempt_duration_seconds_count", **ORDER,
                operation="charge") == 2
    assert grew(before, after, "django_workflows_attempt_start_lag_seconds_count",
                **ORDER) == 4


def test_the_gauges_show_instances_by_status_and_queued_attempts_from_the_tables(
        client: Any) -> None:
    services.create("obs-order", start=True)
    services.create("obs-order", state={"decline": True}, start=True)
    services.create("obs-order")  # idle
    samples = scrape(client, TOKEN)

    assert value(samples, "django_workflows_instances", **ORDER, status="running") == 1
    assert value(samples, "django_workflows_instances", **ORDER, status="failed") == 1
    assert value(samples, "django_workflows_instances", **ORDER, status="idle") == 1
    assert value(samples, "django_workflows_attempts_queued") == 0
    assert value(samples, "django_workflows_attempts_queued_oldest_seconds") == 0
    assert value(samples, "django_workflows_attempts_waiting") == 0
    assert math.isinf(value(samples, "django_workflows_seconds_since_sweep"))  # none ran


def test_attempts_waiting_for_a_slot_are_a_gauge_of_their_own(client: Any) -> None:
    services.create("obs-order", start=True)
    Attempt.objects.filter(pk=Attempt.objects.first().pk).update(status="waiting")
    table_gauges.forget()

    samples = scrape(client, TOKEN)
    assert value(samples, "django_workflows_attempts_waiting") == 1
    assert value(samples, "django_workflows_attempts_queued") == 0


def test_signals_delivered_and_timers_fired_are_counted_with_the_lateness(client: Any
                                                                         ) -> None:
    before = scrape(client, TOKEN)
    delivery = services.create("obs-delivery", start=True)
    services.signal("obs-delivery", "delivered", instance=delivery)
    late = now_datetime() + timedelta(days=14, seconds=30)  # the timer is 30 s overdue
    report = services.sweep(now=late)
    after = scrape(client, TOKEN)

    assert report.fired == 1
    assert grew(before, after, "django_workflows_signals_delivered_total",
                workflow="obs-delivery", signal="delivered") == 1
    assert grew(before, after, "django_workflows_deadlines_fired_total",
                workflow="obs-delivery", kind="timer") == 1
    assert grew(before, after, "django_workflows_deadline_lateness_seconds_count",
                kind="timer") == 1


def test_tasks_open_and_overdue_are_gauges_and_the_time_to_decide_is_timed(client: Any
                                                                           ) -> None:
    waiting = services.create("obs-approval", start=True)
    services.create("obs-approval", start=True)
    services.sweep(now=now_datetime() + timedelta(hours=2))  # both are past due now
    before = scrape(client, TOKEN)
    services.complete(waiting, input={"ok": True})
    table_gauges.forget()
    after = scrape(client, TOKEN)

    approval = {"workflow": "obs-approval"}
    assert value(before, "django_workflows_tasks_open", **approval) == 2
    assert value(before, "django_workflows_tasks_overdue", **approval) == 2
    assert value(after, "django_workflows_tasks_open", **approval) == 1
    assert value(after, "django_workflows_tasks_overdue", **approval) == 1
    assert grew(before, after, "django_workflows_task_decision_seconds_count", **approval,
                step="decide") == 1


def test_the_seconds_since_the_last_sweep_are_read_from_its_lease(client: Any) -> None:
    hold_lease("a-sweeper", now_datetime() - timedelta(seconds=90), ttl=5)
    since = value(scrape(client, TOKEN), "django_workflows_seconds_since_sweep")
    assert 90 <= since < 150


def test_the_gauges_are_read_again_only_once_the_cache_is_old(client: Any, settings: Any
                                                             ) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "METRICS_CACHE": 3600}
    services.create("obs-order")
    assert value(scrape(client, TOKEN), "django_workflows_instances", **ORDER,
                 status="idle") == 1
    services.create("obs-order")
    assert value(scrape(client, TOKEN), "django_workflows_instances", **ORDER,
                 status="idle") == 1


# -- who may read it -------------------------------------------------------------------------


def test_a_scrape_without_credentials_is_asked_for_a_bearer_token(client: Any) -> None:
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_scrape_with_another_token_is_refused(client: Any) -> None:
    response = client.get("/metrics", headers={"Authorization": "Bearer guessed"})
    assert response.status_code == 403


def test_a_user_who_may_view_instances_reads_the_metrics_signed_in(client: Any) -> None:
    viewer = User.objects.create_user("viewer")
    client.force_login(viewer)
    assert client.get("/metrics").status_code == 403
    viewer.user_permissions.add(Permission.objects.get(codename="view_workflowinstance"))
    client.force_login(User.objects.get(pk=viewer.pk))  # permissions are cached on the user
    response = client.get("/metrics")
    assert response.status_code == 200
    assert "django_workflows_instances" in response.content.decode()


def test_openmetrics_is_served_to_a_scraper_that_asks_for_it(client: Any) -> None:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}",
                                               "Accept": "application/openmetrics-text"})
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.decode().rstrip().endswith("# EOF")


# -- beside django-prometheus ----------------------------------------------------------------


@pytest.mark.urls("tests.observability.urls_beside")
def test_the_view_stands_beside_django_prometheus_and_shows_only_our_families(
        client: Any) -> None:
    pytest.importorskip("django_prometheus")
    services.create("obs-order", start=True)

    theirs = client.get("/metrics")
    ours = scrape(client, TOKEN, path="/metrics/workflows")

    assert theirs.status_code == 200
    assert "python_info" in theirs.content.decode()  # the default registry's, as it was
    assert {name for name, _ in ours} and all(
        name.startswith("django_workflows_") for name, _ in ours)
    assert value(ours, "django_workflows_attempts_total", workflow="obs-order",
                 operation="charge", outcome="succeeded") >= 1


# -- work that came back too late, workers that died -----------------------------------------


@pytest.fixture
def idle_runner(settings: Any) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS,
                                 "RUNNER": "tests.observability.conftest.Idle"}


@pytest.mark.usefixtures("idle_runner")
def test_a_result_reported_twice_is_counted_once_as_a_stale_result_dropped(client: Any
                                                                          ) -> None:
    order = services.create("obs-order", start=True)
    [token] = Attempt.objects.filter(instance=order).values_list("token", flat=True)
    claimed = services.claim_attempt(token)
    assert claimed is not None
    before = scrape(client, TOKEN)
    assert services.finish_claimed(claimed, AttemptOutcome(ok=True)) is True
    # The same result again (a task the broker delivered twice): its token is fenced off.
    assert services.finish_attempt(token, AttemptOutcome(ok=True)) is False
    after = scrape(client, TOKEN)

    assert grew(before, after, "django_workflows_stale_results_dropped_total", **ORDER) == 1
    assert grew(before, after, "django_workflows_commands_total", **ORDER,
                command="attempt_finished", outcome="moved", code="") == 1


@pytest.mark.usefixtures("idle_runner")
def test_an_attempt_whose_worker_died_is_counted_when_the_sweep_recovers_it(client: Any
                                                                           ) -> None:
    order = services.create("obs-order", start=True)
    [token] = Attempt.objects.filter(instance=order).values_list("token", flat=True)
    assert services.claim_attempt(token) is not None  # and then its worker is gone
    before = scrape(client, TOKEN)
    report = services.sweep(now=now_datetime() + timedelta(hours=1))
    after = scrape(client, TOKEN)

    assert report.interrupted == 1
    assert grew(before, after, "django_workflows_interrupted_attempts_recovered_total",
                **ORDER) == 1
    assert grew(before, after, "django_workflows_commands_total", **ORDER,
                command="attempt_interrupted", outcome="moved", code="") == 1
