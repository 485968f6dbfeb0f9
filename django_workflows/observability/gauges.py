"""The gauges a scrape reads from the tables: instances by workflow and status, open and
overdue tasks, queued attempts, the time since the last sweep, and what the sweep could
not do.

Each is one query on an index of its table (five in all), read by the process that
answers the scrape, whatever the number of workers, and kept for ``METRICS_CACHE``
seconds, so that several scrapers (or a scrape of every web process) cost one read.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Min, Q
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .. import clock
from ..conf import workflow_settings
from ..models import (
    Attempt,
    AttemptStatus,
    SweepFailure,
    SweepItem,
    SweepLease,
    TaskStatus,
    WorkflowInstance,
    WorkflowTask,
)
from ..services.sweep import LEASE
from .metrics import PREFIX


@dataclass(frozen=True)
class Reading:
    """What the tables said at ``read_at`` (``time.monotonic()``)."""

    read_at: float
    instances: dict[tuple[str, str], int] = field(default_factory=dict)
    open_tasks: dict[str, int] = field(default_factory=dict)
    overdue_tasks: dict[str, int] = field(default_factory=dict)
    queued: int = 0
    oldest_queued: float = 0.0  # seconds the oldest queued attempt has waited
    waiting: int = 0  # attempts held back by their key's Limit or Rate
    since_sweep: float = math.inf  # no sweep ever ran: +Inf
    # The sweep's failed items by (kind, state): "retrying" or "set_aside".
    sweep_failures: dict[tuple[str, str], int] = field(default_factory=dict)


def read() -> Reading:
    """One reading of the tables (five queries, four on an index; the sweep's failures are
    a table that is mostly empty)."""
    now = clock.now()
    instances = {(row["workflow"], row["status"]): row["n"] for row in
                 WorkflowInstance.objects.order_by().values("workflow", "status")
                 .annotate(n=Count("pk"))}
    open_tasks: dict[str, int] = {}
    overdue_tasks: dict[str, int] = {}
    for row in (WorkflowTask.objects.filter(status=TaskStatus.OPEN).order_by()
                .values("workflow", "rank").annotate(n=Count("pk"))):
        open_tasks[row["workflow"]] = open_tasks.get(row["workflow"], 0) + row["n"]
        if row["rank"] == 0:  # the inbox's rank: 0 is overdue
            overdue_tasks[row["workflow"]] = overdue_tasks.get(row["workflow"], 0) + row["n"]
    counts: dict[str, int] = {}
    oldest: datetime | None = None  # of the queued ones
    for status, n, first in (Attempt.objects.filter(
            status__in=(AttemptStatus.QUEUED, AttemptStatus.WAITING)).order_by()
            .values_list("status").annotate(n=Count("pk"), oldest=Min("enqueued_at"))):
        counts[status] = n
        if status == AttemptStatus.QUEUED:
            oldest = first
    swept_at = SweepLease.objects.filter(name=LEASE).values_list("swept_at", flat=True).first()
    sweep_failures: dict[tuple[str, str], int] = {}
    for kind, aside, n in (SweepFailure.objects.order_by().values_list("kind").annotate(
            aside=Count("pk", filter=Q(quarantined_at__isnull=False)), n=Count("pk"))):
        sweep_failures[(kind, "set_aside")] = aside
        sweep_failures[(kind, "retrying")] = n - aside
    return Reading(
        read_at=time.monotonic(), instances=instances, open_tasks=open_tasks,
        overdue_tasks=overdue_tasks, queued=counts.get(AttemptStatus.QUEUED, 0),
        waiting=counts.get(AttemptStatus.WAITING, 0),
        oldest_queued=max(now - oldest.timestamp(), 0.0) if oldest else 0.0,
        since_sweep=max(now - swept_at.timestamp(), 0.0) if swept_at else math.inf,
        sweep_failures=sweep_failures)


class TableGauges(Collector):
    """A collector of the gauges, read again once the last reading is ``METRICS_CACHE``
    seconds old."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading: Reading | None = None

    def reading(self) -> Reading:
        with self._lock:
            last = self._reading
            if last is None or time.monotonic() - last.read_at >= float(
                    workflow_settings.METRICS_CACHE):
                last = self._reading = read()
            return last

    def forget(self) -> None:
        """Read the tables at the next scrape (tests)."""
        with self._lock:
            self._reading = None

    def describe(self) -> Iterator[Metric]:
        return iter(self._families(Reading(read_at=0.0)))

    def collect(self) -> Iterator[Metric]:
        return iter(self._families(self.reading()))

    @staticmethod
    def _families(reading: Reading) -> list[Metric]:
        instances = GaugeMetricFamily(f"{PREFIX}_instances", "Instances by workflow and "
                                      "status.", labels=["workflow", "status"])
        for (workflow, status), count in sorted(reading.instances.items()):
            instances.add_metric([workflow, status], count)
        open_tasks = GaugeMetricFamily(f"{PREFIX}_tasks_open", "Open tasks, by workflow.",
                                       labels=["workflow"])
        overdue = GaugeMetricFamily(f"{PREFIX}_tasks_overdue", "Open tasks past their due "
                                    "time, by workflow.", labels=["workflow"])
        for workflow, count in sorted(reading.open_tasks.items()):
            open_tasks.add_metric([workflow], count)
            overdue.add_metric([workflow], reading.overdue_tasks.get(workflow, 0))
        failures = GaugeMetricFamily(f"{PREFIX}_sweep_failures", "Items the sweep could not "
                                     "do, by kind and state: retrying (tried again later) or "
                                     "set_aside (until someone tries them again).",
                                     labels=["kind", "state"])
        for kind in SweepItem.values:  # every kind, 0 too: a bounded set of series
            for state in ("retrying", "set_aside"):
                failures.add_metric([kind, state], reading.sweep_failures.get((kind, state), 0))
        return [
            instances, open_tasks, overdue, failures,
            GaugeMetricFamily(f"{PREFIX}_attempts_queued", "Attempts handed out that no "
                              "worker claimed yet.", value=reading.queued),
            GaugeMetricFamily(f"{PREFIX}_attempts_queued_oldest_seconds", "How long the "
                              "oldest queued attempt has waited (0: none waits).",
                              value=reading.oldest_queued),
            GaugeMetricFamily(f"{PREFIX}_attempts_waiting", "Attempts waiting for a slot of "
                              "their key (Limit, Rate).", value=reading.waiting),
            GaugeMetricFamily(f"{PREFIX}_seconds_since_sweep", "Seconds since a sweep last "
                              "ran (+Inf: never).", value=reading.since_sweep),
        ]


table_gauges = TableGauges()
