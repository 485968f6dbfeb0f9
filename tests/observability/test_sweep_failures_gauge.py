"""The gauge of what the sweep could not do (issue 36, part 3): its failed items by kind,
still tried again (``retrying``) or set aside until someone tries them again
(``set_aside``), read from the table at scrape time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("prometheus_client")

from django_workflows import services
from django_workflows.models import SweepFailure, SweepItem
from django_workflows.observability.gauges import table_gauges
from tests.observability.conftest import TOKEN
from tests.observability.scrape import scrape
from tests.testapp.sweep_failures import instance_of_a_removed_workflow, later

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.urls("tests.observability.urls"),
              pytest.mark.usefixtures("metrics_on")]

GAUGE = "django_workflows_sweep_failures"


def failures(client: Any) -> dict[tuple[str, str], float]:
    """The gauge's samples, by (kind, state), read afresh."""
    table_gauges.forget()
    return {(dict(labels)["kind"], dict(labels)["state"]): value
            for (name, labels), value in scrape(client, TOKEN).items() if name == GAUGE}


def test_the_gauge_shows_every_kind_in_both_states_at_zero_while_nothing_failed(client: Any
                                                                               ) -> None:
    assert failures(client) == {(kind, state): 0.0 for kind in SweepItem.values
                                for state in ("retrying", "set_aside")}


def test_an_item_that_failed_is_retrying_then_set_aside(client: Any, settings: Any) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SWEEP_RETRIES": 2}
    with instance_of_a_removed_workflow():
        now = later()
        services.sweep(now=now)
        failed_once = failures(client)
        services.sweep(now=SweepFailure.objects.get().retry_at + timedelta(seconds=0.1))
        set_aside = failures(client)

    assert (failed_once[("deadline", "retrying")], failed_once[("deadline", "set_aside")]) == (
        1.0, 0.0)
    assert (set_aside[("deadline", "retrying")], set_aside[("deadline", "set_aside")]) == (
        0.0, 1.0)
    assert sum(set_aside.values()) == 1.0  # no other kind counts it


def test_an_item_tried_again_leaves_the_gauge(client: Any, settings: Any) -> None:
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "SWEEP_RETRIES": 1}
    with instance_of_a_removed_workflow():
        services.sweep(now=later())
        assert failures(client)[("deadline", "set_aside")] == 1.0

        services.retry_set_aside(SweepFailure.objects.all())

        assert failures(client)[("deadline", "set_aside")] == 0.0
