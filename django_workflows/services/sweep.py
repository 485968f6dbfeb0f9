"""The sweep: fire due deadlines, interrupt attempts whose heartbeat expired, and
hand out again attempts that no worker claimed. Idempotent: any number of
sweeps may run at once, on any number of machines.

Who sweeps is decided by a lease (one ``SweepLease`` row): the sweepers in
django-q2's workers (``django_workflows.sweeper``) take turns through it, and
its ``swept_at`` says when a sweep last ran, for the admin's banner and the
system check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.db.models import Q, QuerySet

from .. import clock
from ..conf import workflow_settings
from ..models import Attempt, AttemptStatus, Deadline, SweepFailure, SweepItem, SweepLease
from . import reports
from .attempts import (
    apply_kept_result,
    fire_attempt_timeout,
    fire_deadline,
    interrupt_attempt,
    still_trying,
)
from .dispatch import hand_out
from .schedules import fire_due_schedules, next_schedule_due_at
from .signal_hand_over import expire_kept_signals, first_awaiting, hand_kept, kept_and_awaited
from .slots import hand_out_due, next_look_at
from .sweep_items import Items, without_held_back

LEASE = "sweep"


@dataclass
class SweepReport:
    fired: int = 0
    interrupted: int = 0
    redispatched: int = 0
    signals: int = 0  # kept signals handed to instances that wait for them now
    scheduled: int = 0  # instances the schedules made
    failed: int = 0  # items that raised (recorded: services/sweep_items.py)

    def __bool__(self) -> bool:
        return bool(self.fired or self.interrupted or self.redispatched or self.signals
                    or self.scheduled or self.failed)

    def __str__(self) -> str:
        return (f"{counted(self.fired, 'deadline')} fired, "
                f"{counted(self.interrupted, 'attempt')} interrupted, "
                f"{counted(self.redispatched, 'attempt')} handed out again"
                + (f", {counted(self.signals, 'kept signal')} delivered" if self.signals
                   else "")
                + (f", {counted(self.scheduled, 'scheduled run')} made" if self.scheduled
                   else "")
                + (f", {counted(self.failed, 'item')} failed" if self.failed else ""))


def counted(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def sweep_turn(now: datetime, *, whole: bool, limit: int = 500) -> SweepReport:
    """One turn of the sweep: the one composition every runner's sweeper calls.

    Every turn fires what fell due: deadlines, attempts' own timeouts, keys whose waiting
    attempts may start, results kept on their attempts' rows, then the schedules. A
    ``whole`` turn (every ``SWEEP_INTERVAL``) also interrupts attempts of silent workers,
    hands out again attempts no worker claimed, and looks after kept signals, between
    the two. Each item is its own unit of work: one that raises is recorded, and the
    others go on (``sweep_items.py``)."""
    report = SweepReport()
    with reports.sweep_turn() as done:  # its units are reported as part of the turn
        report.fired = fire_due_deadlines(now, limit, report)
        if whole:
            report.interrupted = interrupt_silent_attempts(now, limit, report)
            report.redispatched = redispatch_lost_attempts(now, limit, report)
            report.signals = look_after_kept_signals(now, report)
        report.scheduled = fire_due_schedules(now, report=report)
        done(report)
    return report


def sweep(now: datetime | None = None, limit: int = 500) -> SweepReport:
    """One whole sweep (:func:`sweep_turn`), recorded as run: ``manage.py workflows_sweep``
    without ``--loop``, a cron job, a test."""
    now = now or clock.now_datetime()
    report = sweep_turn(now, whole=True, limit=limit)
    SweepLease.objects.filter(name=LEASE).update(swept_at=now)
    return report


def look_after_kept_signals(now: datetime, report: SweepReport | None = None) -> int:
    """Kept signals: handed to instances that wait for them now; expired when too old."""
    expire_kept_signals(now)
    items = Items(SweepItem.KEPT_SIGNAL, now)
    taken = sum(items.run(row.pk, partial(first_awaiting, row), partial(hand_kept, row)) or 0
                for row in kept_and_awaited(now))
    _count_failed(report, items)
    return taken


def fire_due_deadlines(now: datetime, limit: int = 500,
                       report: SweepReport | None = None) -> int:
    """Fire what is due, oldest first, each in its own unit of work: the deadline rows,
    then the running attempts' own timeouts, then the waiting attempts whose rate lets
    them start now (``slots.py``). One that raises is recorded and held back a while
    (``sweep_items.py``): it neither stops nor hides the others."""
    deadlines = Items(SweepItem.DEADLINE, now)
    due = without_held_back(Deadline.objects.filter(due_at__lte=now), deadlines.kind, now)
    fired = sum(bool(deadlines.run(deadline.pk, deadline.instance_id,
                                   partial(fire_deadline, deadline)))
                for deadline in list(due.order_by("due_at")[:limit]))
    timeouts = Items(SweepItem.ATTEMPT_TIMEOUT, now)
    timed_out = without_held_back(Attempt.objects.filter(
        status=AttemptStatus.RUNNING, timeout_at__lte=now), timeouts.kind, now)
    fired += sum(bool(timeouts.run(token, instance_id,
                                   partial(fire_attempt_timeout, token, instance_id)))
                 for token, instance_id in list(timed_out.values_list("token", "instance_id")
                                                [:limit]))
    keys = Items(SweepItem.LIMIT_KEY, now)
    fired += hand_out_due(now, each=keys)
    results = Items(SweepItem.RESULT, now)
    fired += sum(bool(results.run(token, instance_id, partial(
        apply_kept_result, token, instance_id, result)))
        for token, instance_id, result in list(kept_results(now).values_list(
            "token", "instance_id", "result")[:limit]))
    _count_failed(report, deadlines, timeouts, keys, results)
    return fired


def kept_results(now: datetime) -> QuerySet[Attempt]:
    """The results workers kept on their attempts' rows and could not report (their
    instance stayed locked) and no longer try to: the sweep applies them."""
    return without_held_back(Attempt.objects.filter(
        status=AttemptStatus.REPORTED, finished_at__lte=now - still_trying()),
        SweepItem.RESULT, now, field="token")


def _count_failed(report: SweepReport | None, *items: Items) -> None:
    if report is not None:
        report.failed += sum(i.failed for i in items)


def next_deadline_at() -> datetime | None:
    """When the next deadline, attempt timeout or schedule falls due, or a failed item is
    tried again (a read of each one's index): one held back is not due, or the sweeper
    would wake for it again and again."""
    now = clock.now_datetime()
    times = [without_held_back(Deadline.objects.all(), SweepItem.DEADLINE, now)
             .order_by("due_at").values_list("due_at", flat=True).first(),
             without_held_back(Attempt.objects.filter(
                 status=AttemptStatus.RUNNING, timeout_at__isnull=False),
                 SweepItem.ATTEMPT_TIMEOUT, now)
             .order_by("timeout_at").values_list("timeout_at", flat=True).first(),
             SweepFailure.objects.filter(retry_at__isnull=False).order_by("retry_at")
             .values_list("retry_at", flat=True).first(),
             _after_trying(without_held_back(
                 Attempt.objects.filter(status=AttemptStatus.REPORTED), SweepItem.RESULT, now,
                 field="token").order_by("finished_at").values_list("finished_at", flat=True)
                 .first()),
             next_schedule_due_at(), next_look_at()]
    return min((t for t in times if t is not None), default=None)


def _after_trying(finished_at: datetime | None) -> datetime | None:
    return None if finished_at is None else finished_at + still_trying()


def interrupt_silent_attempts(now: datetime, limit: int = 500,
                              report: SweepReport | None = None) -> int:
    expired = now - timedelta(seconds=workflow_settings.HEARTBEAT_TIMEOUT)
    items = Items(SweepItem.SILENT_ATTEMPT, now)
    silent = without_held_back(Attempt.objects.filter(
        status=AttemptStatus.RUNNING, heartbeat_at__lt=expired), items.kind, now)
    interrupted = sum(bool(items.run(token, instance_id, partial(
        interrupt_attempt, token, instance_id=instance_id)))
        for token, instance_id in list(silent.values_list("token", "instance_id")[:limit]))
    _count_failed(report, items)
    return interrupted


def redispatch_lost_attempts(now: datetime, limit: int = 500,
                             report: SweepReport | None = None) -> int:
    """Hand out again attempts that no worker claimed for ``REDISPATCH_AFTER``; and the
    waiting attempts of every key that has room (a release lost with its process)."""
    keys = Items(SweepItem.LIMIT_KEY, now)
    released = hand_out_due(now, every_key=True, each=keys)
    _count_failed(report, keys)
    lost_before = now - timedelta(seconds=workflow_settings.REDISPATCH_AFTER)
    lost = Attempt.objects.filter(status=AttemptStatus.QUEUED, enqueued_at__lt=lost_before)
    tokens = list(lost.values_list("token", flat=True)[:limit])
    if tokens:
        Attempt.objects.filter(token__in=tokens, status=AttemptStatus.QUEUED).update(
            enqueued_at=now)
        hand_out(workflow_settings.RUNNER(), tokens)  # a broker that fails: the next sweep
    return released + len(tokens)


# -- the lease ---------------------------------------------------------------------------


def hold_lease(holder: str, now: datetime, ttl: float) -> bool:
    """Take the lease (free or expired) or renew our own for ``ttl`` seconds.

    Holding it is sweeping, so it also records that a sweep ran at ``now``.
    One ``UPDATE``: whoever's matches the row holds it. The row is made again
    when it is missing (a test database's flush).
    """
    free = Q(holder=holder) | Q(held_until__isnull=True) | Q(held_until__lt=now)

    def take() -> bool:
        return bool(SweepLease.objects.filter(free, name=LEASE).update(
            holder=holder, held_until=now + timedelta(seconds=ttl), swept_at=now))

    if take():
        return True
    if SweepLease.objects.filter(name=LEASE).exists():
        return False
    SweepLease.objects.bulk_create([SweepLease(name=LEASE)], ignore_conflicts=True)
    return take()


def release_lease(holder: str) -> None:
    """Let another sweeper take over at once (a worker that exits cleanly)."""
    SweepLease.objects.filter(name=LEASE, holder=holder).update(held_until=None)


@dataclass
class SweepHealth:
    swept_at: datetime | None  # when a sweep last ran (None: never)
    overdue: int  # deadlines and unclaimed attempts waiting well past their time (capped)
    # Items that failed SWEEP_RETRIES times in a row, until tried again; and items that
    # failed and are tried again later (sweep_items.py). Capped as overdue is.
    set_aside: int = 0
    retrying: int = 0

    @property
    def stuck(self) -> bool:
        """No sweep lately while work waits for one: what the banner and W030 say."""
        return self.overdue > 0


def grace() -> timedelta:
    """How late a sweep may be before the site says so: a few intervals."""
    return timedelta(seconds=3 * float(workflow_settings.SWEEP_INTERVAL))


def sweep_health(now: datetime | None = None, cap: int = 100) -> SweepHealth:
    """Whether sweeps run (the overdue work is only counted, up to ``cap``, when not), and
    how many items failed (up to ``cap``): set aside, or still tried again."""
    now = now or clock.now_datetime()
    swept_at = SweepLease.objects.filter(name=LEASE).values_list("swept_at", flat=True).first()
    failures = SweepFailure.objects.values_list("pk", flat=True)  # mostly none: counted (capped)
    failing = {"set_aside": len(failures.filter(quarantined_at__isnull=False)[:cap]),
               "retrying": len(failures.filter(quarantined_at__isnull=True)[:cap])}
    if swept_at is not None and swept_at >= now - grace():
        return SweepHealth(swept_at, 0, **failing)
    late = now - grace()
    deadlines = len(Deadline.objects.filter(due_at__lt=late).values_list("pk", flat=True)[:cap])
    unclaimed = len(Attempt.objects.filter(
        status=AttemptStatus.QUEUED, enqueued_at__lt=late).values_list("pk", flat=True)[:cap])
    timed_out = len(Attempt.objects.filter(
        status=AttemptStatus.RUNNING, timeout_at__lt=late).values_list("pk", flat=True)[:cap])
    return SweepHealth(swept_at, min(cap, deadlines + unclaimed + timed_out), **failing)
