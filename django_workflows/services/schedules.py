"""Schedules (``docs/schedules.md``): one instance per due time, whoever sweeps and how often.

A schedule is declared in code (``engine/schedules.py``); its row
(``WorkflowSchedule``) says whether it is paused and where it stands: the next due
time not yet run (``next_due_at``, the sweeper wakes for it), the last one run or
skipped, the last run. :func:`fire_due_schedules` runs in every sweep: each due
schedule in a transaction of its own that holds its row (``SKIP LOCKED``: another
sweeper busy with it is left to it), one instance per due time with the reference
``"<schedule id>@<ISO time in UTC>"``, unique per workflow, so that even a row made
again from scratch cannot make a due time's instance twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from .. import clock, engine, registry
from ..conf import workflow_settings
from ..engine.schedules import Schedule, cron_library_installed
from ..exceptions import NotAllowed, ReferenceTaken, WorkflowError
from ..models import SweepItem, WorkflowInstance, WorkflowSchedule
from .commands import create
from .sweep_items import Items, held_back_keys

logger = logging.getLogger("django_workflows")

CHANGE_PERMISSION = "django_workflows.change_workflowschedule"
ONE_MICROSECOND = timedelta(microseconds=1)

# The next due time each row was last found to hold, for the schedule as declared: a
# row that still holds it needs no reckoning on the next sweep.
_checked: dict[str, tuple[Schedule, datetime | None]] = {}


class UnknownSchedule(WorkflowError, LookupError):
    """No schedule of that id is registered."""


@dataclass
class Fired:
    """What one sweep did with one schedule."""

    made: int = 0  # instances made
    skipped: int = 0  # due times skipped: the last run was unfinished (overlap="skip")
    failed: int = 0  # due times whose instance could not be made (logged)


def grace() -> timedelta:
    """How late a due time may be and still run under ``catch_up="none"``: three sweep
    intervals, at least 10 s (a sweeper takes over from one that died in about 6 s)."""
    return timedelta(seconds=max(10.0, 3 * float(workflow_settings.SWEEP_INTERVAL)))


def schedule_named(schedule_id: str) -> Schedule:
    schedule = registry.find_schedule(schedule_id)
    if schedule is None:
        raise UnknownSchedule(f'No schedule "{schedule_id}" is registered')
    return schedule


def sweepable(now: datetime) -> list[Schedule]:
    """The registered schedules a sweep can reckon (a cron one needs cronsim: check E053),
    but those held back after a failure (``sweep_items.py``): the sweeper neither fails its
    turn for them nor wakes at once for them again."""
    schedules = registry.all_schedules()
    held = held_back_keys(SweepItem.SCHEDULE, now) if schedules else set()
    return [s for s in schedules if s.id not in held
            and (s.cron is None or cron_library_installed())]


def runs_of(schedule_id: str) -> QuerySet[WorkflowInstance]:
    """The instances a registered schedule made: of its workflow, their reference starting
    ``"<id>@"`` (a range of the workflow and reference index, not a scan)."""
    schedule = registry.find_schedule(schedule_id)
    if schedule is None:
        return WorkflowInstance.objects.none()
    return WorkflowInstance.objects.filter(workflow=schedule.workflow_id,
                                           reference__startswith=f"{schedule.id}@")


# -- the rows ----------------------------------------------------------------------------


def sync_schedules(now: datetime | None = None) -> None:
    """Give every registered schedule its row, and reckon again the next due time of a row
    that does not hold one of its schedule's (new, or its cron/every changed).

    A new schedule starts with its first due time after ``now``: nothing before it was
    missed. Cheap when nothing changed: one read of the rows.
    """
    now = now or clock.now_datetime()
    schedules = sweepable(now)
    if not schedules:
        return
    rows = {pk: (next_due_at, paused) for pk, next_due_at, paused in
            WorkflowSchedule.objects.filter(pk__in=[s.id for s in schedules])
            .values_list("pk", "next_due_at", "paused")}
    missing = [WorkflowSchedule(id=s.id, next_due_at=s.next_due(now), updated_at=now)
               for s in schedules if s.id not in rows]
    if missing:
        WorkflowSchedule.objects.bulk_create(missing, ignore_conflicts=True)
    for schedule in schedules:
        if schedule.id not in rows:
            continue
        next_due_at, paused = rows[schedule.id]
        if paused or _checked.get(schedule.id) == (schedule, next_due_at):
            continue
        if next_due_at is None or not schedule.is_due_time(next_due_at):
            # From where it stood (a due time missed stays missed), or from now.
            since = now if next_due_at is None else min(next_due_at, now)
            reckoned = schedule.next_due(since - ONE_MICROSECOND)
            WorkflowSchedule.objects.filter(pk=schedule.id, next_due_at=next_due_at).update(
                next_due_at=reckoned, updated_at=now)
            next_due_at = reckoned
        _checked[schedule.id] = (schedule, next_due_at)


def next_schedule_due_at() -> datetime | None:
    """When the next unpaused registered schedule falls due (a read of its index)."""
    ids = [schedule.id for schedule in sweepable(clock.now_datetime())]
    if not ids:
        return None
    return (WorkflowSchedule.objects.filter(pk__in=ids, paused=False, next_due_at__isnull=False)
            .order_by("next_due_at").values_list("next_due_at", flat=True).first())


# -- firing ------------------------------------------------------------------------------


def fire_due_schedules(now: datetime | None = None, limit: int = 100,
                       report: Any = None) -> int:
    """Make the instances of the schedules due at ``now``; how many were made.

    Any number of sweeps may run this at once: a due time makes one instance. Each
    schedule is an item of the sweep of its own: one that raises is recorded and held
    back a while (``sweep_items.py``), and neither stops the others nor the deadlines.
    ``report``: the sweep's report, which counts the failures.
    """
    now = now or clock.now_datetime()
    schedules = {schedule.id: schedule for schedule in sweepable(now)}
    if not schedules:
        return 0
    sync_schedules(now)
    # A row of a schedule no longer declared stays as it is.
    due = list(WorkflowSchedule.objects.filter(pk__in=list(schedules), paused=False,
                                               next_due_at__lte=now)
               .order_by("next_due_at").values_list("pk", flat=True)[:limit])
    items = Items(SweepItem.SCHEDULE, now)
    made = sum(getattr(items.run(schedule_id, None, partial(
        fire_schedule, schedules[schedule_id], now)), "made", 0) for schedule_id in due)
    if report is not None:
        report.failed += items.failed
    return made


def fire_schedule(schedule: Schedule, now: datetime) -> Fired:
    """Run the due times of ``schedule`` up to ``now`` (by its ``catch_up``), in one
    transaction that holds its row: the instances and the row's new next due time are
    saved together, or neither is."""
    fired = Fired()
    with transaction.atomic():
        row = (WorkflowSchedule.objects.select_for_update(skip_locked=True)
               .filter(pk=schedule.id, paused=False, next_due_at__lte=now).first())
        if row is None or row.next_due_at is None:
            return fired  # another sweep holds it, or has just run it
        plan = schedule.plan(row.next_due_at, now, grace=grace())
        if plan.dropped:
            logger.warning('Schedule "%s": due times from %s on were missed and are not run '
                           '(catch_up="%s")', schedule.id, row.next_due_at.isoformat(),
                           schedule.catch_up)
        for due in plan.run:
            if schedule.overlap == "skip" and _unfinished(row.last_run_id):
                row.skipped += 1
                row.last_skipped_at = due
                fired.skipped += 1
            else:
                run_id, made = _make_run(schedule, due)
                if run_id is None:
                    fired.failed += 1
                else:
                    row.last_run_id = run_id
                    fired.made += made
            row.last_due_at = due
        row.next_due_at = plan.next_due
        row.updated_at = now
        row.save(update_fields=["next_due_at", "last_due_at", "last_run", "skipped",
                                "last_skipped_at", "updated_at"])
    _checked[schedule.id] = (schedule, plan.next_due)
    return fired


def _unfinished(run_id: Any) -> bool:
    return run_id is not None and WorkflowInstance.objects.filter(pk=run_id).exclude(
        status__in=engine.FINISHED).exists()


def _make_run(schedule: Schedule, due: datetime) -> tuple[Any, bool]:
    """The instance of ``due``: (its id, whether made now). (None, False) when it could not
    be made: the error is logged and the due time is not tried again (a state callable or
    a workflow that fails once would fail at every sweep)."""
    reference = schedule.reference(due)
    try:
        instance = create(schedule.workflow_id, state=schedule.state_at(due),
                          start=schedule.start, reference=reference)
    except ReferenceTaken as taken:  # made already: by another sweep, or by hand
        return taken.existing, False
    except Exception:
        logger.exception('Schedule "%s": the run of %s could not be made', schedule.id,
                         due.isoformat())
        return None, False
    return instance.pk, True


# -- pause and resume --------------------------------------------------------------------


def may_pause(user: Any) -> bool:
    """Whether ``user`` may pause and resume schedules: the schedule model's change
    permission (a superuser has it)."""
    return bool(getattr(user, "is_authenticated", False) and user.has_perm(CHANGE_PERMISSION))


def pause_schedule(schedule_id: str, *, user: Any = None) -> WorkflowSchedule:
    """Stop making instances until :func:`resume_schedule`. ``user``: judged (the change
    permission of schedules); without one the caller is trusted."""
    return _set_paused(schedule_id, True, user)


def resume_schedule(schedule_id: str, *, user: Any = None) -> WorkflowSchedule:
    """Make instances again, from the first due time after now: the due times that passed
    while it was paused are not run, whatever its ``catch_up`` (pausing said so)."""
    return _set_paused(schedule_id, False, user)


def _set_paused(schedule_id: str, paused: bool, user: Any) -> WorkflowSchedule:
    schedule = schedule_named(schedule_id)
    if user is not None and not may_pause(user):
        raise NotAllowed("You do not have permission to pause or resume schedules.")
    now = clock.now_datetime()
    with transaction.atomic():
        row = WorkflowSchedule.objects.select_for_update().filter(pk=schedule.id).first()
        if row is None:
            WorkflowSchedule.objects.bulk_create([WorkflowSchedule(
                id=schedule.id, next_due_at=schedule.next_due(now), updated_at=now)],
                ignore_conflicts=True)
            row = WorkflowSchedule.objects.select_for_update().get(pk=schedule.id)
        if row.paused == paused:
            return row
        row.paused = paused
        if not paused:
            row.next_due_at = schedule.next_due(now)
        row.updated_at = now
        row.save(update_fields=["paused", "next_due_at", "updated_at"])
    _checked.pop(schedule.id, None)
    return row
