"""The sweep: fire due deadlines, interrupt attempts whose heartbeat expired, and
hand out again attempts that no worker claimed. Idempotent: any number of
sweeps may run at once, on any number of machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .. import clock
from ..conf import workflow_settings
from ..models import Attempt, AttemptStatus, Deadline
from .attempts import fire_deadline, interrupt_attempt


@dataclass
class SweepReport:
    fired: int = 0
    interrupted: int = 0
    redispatched: int = 0

    def __str__(self) -> str:
        return (f"{self.fired} deadlines fired, {self.interrupted} attempts interrupted, "
                f"{self.redispatched} attempts handed out again")


def sweep(now: datetime | None = None, limit: int = 500) -> SweepReport:
    now = now or clock.now_datetime()
    report = SweepReport()
    # One query for each kind of due row; each row is then handled in its own transaction.
    due = Deadline.objects.filter(due_at__lte=now).order_by("due_at")
    for deadline in list(due[:limit]):
        report.fired += fire_deadline(deadline)
    expired = now - timedelta(seconds=workflow_settings.HEARTBEAT_TIMEOUT)
    silent = Attempt.objects.filter(status=AttemptStatus.RUNNING, heartbeat_at__lt=expired)
    for token, instance_id in list(silent.values_list("token", "instance_id")[:limit]):
        report.interrupted += interrupt_attempt(token, instance_id=instance_id)
    lost_before = now - timedelta(seconds=workflow_settings.REDISPATCH_AFTER)
    lost = Attempt.objects.filter(status=AttemptStatus.QUEUED, enqueued_at__lt=lost_before)
    tokens = list(lost.values_list("token", flat=True)[:limit])
    if tokens:
        from ..runners import get_runner

        Attempt.objects.filter(token__in=tokens, status=AttemptStatus.QUEUED).update(
            enqueued_at=now)
        get_runner().enqueue(tokens)
        report.redispatched = len(tokens)
    return report
