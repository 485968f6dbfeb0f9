"""Retention: delete finished instances (with their events, attempts, deadlines and
idempotency keys) in small atomic batches, and expired idempotency keys."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from .. import clock, engine
from ..conf import workflow_settings
from ..models import IdempotencyKey, WorkflowInstance


@dataclass
class PurgeReport:
    instances: int = 0
    batches: int = 0
    keys: int = 0

    def __str__(self) -> str:
        return (f"Deleted {self.instances} finished instances in {self.batches} batches "
                f"and {self.keys} expired idempotency keys")


def purge(older_than: timedelta, *, batch_size: int = 500, now: datetime | None = None,
          dry_run: bool = False) -> PurgeReport:
    """Delete root instances completed or cancelled before ``now - older_than``.

    Children go with their root. Each batch is one transaction that skips rows
    another transaction holds, so purging never waits for (or blocks) commands.
    """
    now = now or clock.now_datetime()
    report = PurgeReport()
    finished = WorkflowInstance.objects.filter(
        parent__isnull=True, status__in=engine.FINISHED,
        completed_at__lt=now - older_than).order_by("completed_at")
    if dry_run:
        report.instances = finished.count()
        return report
    while True:
        with transaction.atomic():
            ids = list(finished.select_for_update(skip_locked=True)
                       .values_list("pk", flat=True)[:batch_size])
            if not ids:
                break
            WorkflowInstance.objects.filter(pk__in=ids).delete()
        report.instances += len(ids)
        report.batches += 1
    expired = now - timedelta(seconds=workflow_settings.IDEMPOTENCY_KEY_TTL)
    report.keys, _ = IdempotencyKey.objects.filter(created_at__lt=expired).delete()
    return report
