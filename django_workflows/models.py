"""Instances, their event log, idempotency keys, attempts and deadlines.

Only the service layer (``django_workflows.services``) writes these rows.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, get_args

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from . import engine


def _epoch(value: Any) -> float | None:
    return value.timestamp() if value is not None else None


ACTIVE_STATUSES = engine.ACTIVE  # the status groups: engine/snapshot.py


class Status(models.TextChoices):
    IDLE = "idle", _("Idle")
    RUNNING = "running", _("Running")
    BLOCKED = "blocked", _("Blocked")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")
    COMPLETED = "completed", _("Completed")
    ROLLING_BACK = "rolling-back", _("Rolling back")
    PAUSED = "paused", _("Paused")


if tuple(Status.values) != get_args(engine.WorkflowStatus):  # the engine declares them
    raise ImproperlyConfigured("models.Status must list engine.WorkflowStatus, in its order")


class WorkflowInstance(models.Model):
    """One running copy of a workflow: its state and where it stands."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow = models.CharField(_("workflow"), max_length=200)
    # The caller's own name for the instance (an order number): one per workflow at most.
    # NULL when none: unique constraints let NULLs repeat on every database (Django's advice
    # for a unique CharField that may be blank).
    # Its index (dwf_instance_reference) serves a prefix search too on PostgreSQL.
    reference = models.CharField(_("reference"), max_length=200, null=True,  # noqa: DJ001
                                 blank=True, default=None)
    version = models.PositiveIntegerField(_("version"))
    status = models.CharField(_("status"), max_length=20, choices=Status.choices,
                              default=Status.IDLE)
    state = models.JSONField(_("state"), default=dict)
    current_step = models.CharField(_("current step"), max_length=200, blank=True, default="")
    # The rest of the engine's snapshot: completed/skipped steps, history, errors,
    # operations, parallel branches, the step run, stopping attempts, rollback plan.
    snapshot = models.JSONField(_("snapshot"), default=dict)
    # Its index (dwf_instance_parent) holds the children only.
    parent = models.ForeignKey("self", verbose_name=_("parent"), null=True, blank=True,
                               on_delete=models.CASCADE, related_name="children",
                               db_index=False)
    parent_step = models.CharField(_("parent step"), max_length=200, blank=True, default="")
    # No index of its own: dwf_instance_owner_updated starts with it, and every index
    # is written again by every command.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("owner"), null=True,
                              blank=True, on_delete=models.SET_NULL,
                              related_name="workflow_instances", db_index=False)
    revision = models.PositiveIntegerField(_("revision"), default=0)
    last_event = models.PositiveIntegerField(_("last event number"), default=0)
    # The signal the current step waits for, and the value it correlates on (the snapshot's
    # ``waiting``, in columns: a signal by correlation finds its instances by index).
    awaiting = models.CharField(_("awaiting signal"), max_length=200, null=True,  # noqa: DJ001
                                blank=True, default=None)
    correlation = models.CharField(_("correlation"), max_length=200, null=True,  # noqa: DJ001
                                   blank=True, default=None)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    completed_at = models.DateTimeField(_("completed"), null=True, blank=True)
    # Not a column: set True on the instance a command answers from a replayed idempotency
    # key (services.idempotency.replay); otherwise unset, read as getattr(row, "replayed", False).
    replayed: bool

    class Meta:
        verbose_name = _("workflow instance")
        verbose_name_plural = _("workflow instances")
        indexes = [
            models.Index(fields=["workflow", "status"], name="dwf_instance_workflow_status"),
            models.Index(fields=["status", "updated_at"], name="dwf_instance_status_updated"),
            # The status last: the workflow page counts a step's instances by status from
            # this index alone, and the changelist's step filter uses its start.
            models.Index(fields=["workflow", "current_step", "status"],
                         name="dwf_instance_step_status"),
            models.Index(fields=["-updated_at"], name="dwf_instance_updated"),
            models.Index(fields=["owner", "-updated_at"], name="dwf_instance_owner_updated"),
            models.Index(fields=["updated_at"], name="dwf_instance_active",
                         condition=Q(status__in=ACTIVE_STATUSES)),
            # Partial indexes (PostgreSQL, SQLite; MariaDB and MySQL make them whole): every
            # command writes the instance's row anew, and with it an entry in each index
            # that holds the row, so the rows most instances leave empty are left out.
            models.Index(fields=["workflow", "awaiting", "correlation"],
                         name="dwf_instance_awaiting", condition=Q(awaiting__isnull=False)),
            models.Index(fields=["parent"], name="dwf_instance_parent",
                         condition=Q(parent__isnull=False)),
            models.Index(fields=["reference"], name="dwf_instance_reference",
                         opclasses=["varchar_pattern_ops"],
                         condition=Q(reference__isnull=False)),
        ]
        constraints = [
            models.UniqueConstraint(fields=["workflow", "reference"],
                                    name="dwf_instance_workflow_reference"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} {self.id}"

    @property
    def name(self) -> str:
        """What people call it: its reference, or the start of its id."""
        return self.reference or f"{str(self.pk)[:8]}…"

    def engine_data(self) -> dict[str, Any]:
        """The row in the engine's JSON shape (its nested child is a row of its own)."""
        data = {key: value for key, value in self.snapshot.items() if key != "nested_id"}
        data.update(id=str(self.pk), workflow=self.workflow, version=self.version,
                    status=self.status, state=self.state, current_step=self.current_step or None,
                    parent_id=str(self.parent_id) if self.parent_id else None,
                    parent_step=self.parent_step or None, started_at=_epoch(self.started_at),
                    completed_at=_epoch(self.completed_at))
        return data

    @property
    def snap(self) -> engine.WorkflowSnapshot:
        """The row as the engine's typed snapshot: the one reading of what it stores.

        Rebuilt whenever ``state`` or ``snapshot`` were replaced (the services do).
        """
        key = (id(self.snapshot), id(self.state), self.status, self.current_step)
        cached = self.__dict__.get("_snap")
        if cached is None or cached[0] != key:
            cached = (key, engine.from_json(self.engine_data()))
            self.__dict__["_snap"] = cached
        return cached[1]

    @property
    def nested_id(self) -> str | None:
        """The current nested child's id (the link the row stores to the child's own row)."""
        nested: str | None = self.snapshot.get("nested_id")
        return nested

    # Parts of the snapshot as plain JSON (lists and dicts), for templates and user code.
    @property
    def completed_steps(self) -> list[str]:
        return list(self.snap.completed_steps)

    @property
    def skipped_steps(self) -> list[str]:
        return list(self.snap.skipped_steps)

    @property
    def history(self) -> list[str]:
        return list(self.snap.history)

    @property
    def errors(self) -> list[str]:
        return list(self.snap.errors)

    @property
    def operations(self) -> list[dict[str, Any]]:
        return [engine.to_json(op) for op in self.snap.operations]

    @property
    def parallel(self) -> list[dict[str, Any]]:
        return [engine.to_json(branch) for branch in self.snap.parallel]

    @property
    def is_finished(self) -> bool:
        return self.status in engine.FINISHED


# The events that end a stay in their own step, and those that record a failure (the
# workflow page reads them by these indexes), as engine/events.py declares them.
STAY_END_EVENTS = engine.STAY_LEAVES
FAILURE_EVENTS = engine.FAILURES


class WorkflowEvent(models.Model):
    """The append-only event log of an instance, numbered from 1."""

    # No index of its own: dwf_event_instance_sequence starts with it (each event saved
    # one index entry fewer).
    instance = models.ForeignKey(WorkflowInstance, verbose_name=_("instance"),
                                 on_delete=models.CASCADE, related_name="events",
                                 db_index=False)
    sequence = models.PositiveIntegerField(_("number"))
    type = models.CharField(_("type"), max_length=40)
    step = models.CharField(_("step"), max_length=200, blank=True, default="")
    # Its index (dwf_event_actor) holds the events a person caused, not the workers' ones.
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("actor"), null=True,
                              blank=True, on_delete=models.SET_NULL, related_name="+",
                              db_index=False)
    revision = models.PositiveIntegerField(_("revision"))
    error = models.JSONField(_("error"), null=True, blank=True)
    data = models.JSONField(_("data"), default=dict, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now)

    class Meta:
        verbose_name = _("workflow event")
        verbose_name_plural = _("workflow events")
        ordering = ["instance", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "sequence"],
                                    name="dwf_event_instance_sequence"),
        ]
        indexes = [models.Index(fields=["actor"], name="dwf_event_actor",
                                condition=Q(actor__isnull=False)),
                   # The workflow page's newest stays and failures of a step over a period:
                   # partial, so the other events (most of them) write no entry.
                   models.Index(fields=["step", "created_at"], name="dwf_event_stay_end",
                                condition=Q(type__in=STAY_END_EVENTS)),
                   models.Index(fields=["step", "created_at"], name="dwf_event_failure",
                                condition=Q(type__in=FAILURE_EVENTS))]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.type}"


class IdempotencyKey(models.Model):
    """The first answer to a request made with an ``Idempotency-Key``."""

    # Whose key it is: "user:<pk>", or "" for calls made without a user.
    scope = models.CharField(max_length=100, blank=True, default="")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)  # what the request asked, hashed
    instance = models.ForeignKey(WorkflowInstance, null=True, blank=True,
                                 on_delete=models.CASCADE, related_name="+")
    # The first request's result, neutral of how it is shown: the instance and its
    # revision, or the refusal's code and message.
    revision = models.PositiveIntegerField(null=True, blank=True)
    refusal_code = models.CharField(max_length=100, blank=True, default="")
    refusal_message = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("idempotency key")
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="dwf_idempotency_scope_key"),
        ]

    def __str__(self) -> str:
        return self.key


class AttemptStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    FINISHED = "finished", _("Finished")
    INTERRUPTED = "interrupted", _("Interrupted")  # its worker stopped sending heartbeats
    DROPPED = "dropped", _("Dropped")  # stopped before it ran, or its result was stale
    WAITING = "waiting", _("Waiting for a slot")  # held back by its Limit or Rate
    # It ended, and its result is kept on its row until its instance takes it: the lock of
    # the instance stayed taken (services/attempts.py); the sweep applies it then.
    REPORTED = "reported", _("Reported")


class Attempt(models.Model):
    """One run of background work (an operation attempt, a branch, a compensation).

    The worker writes its heartbeat, progress and log lines here, never on the
    instance row, so a busy operation does not hold up commands.
    """

    token = models.CharField(max_length=64, primary_key=True)
    instance = models.ForeignKey(WorkflowInstance, on_delete=models.CASCADE,
                                 related_name="attempts")
    kind = models.CharField(max_length=20)
    target = models.CharField(max_length=400)
    number = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=20, choices=AttemptStatus.choices,
                              default=AttemptStatus.QUEUED)
    live_status = models.CharField(max_length=20, blank=True, default="")
    timeout = models.FloatField(null=True, blank=True)
    stop_reason = models.TextField(blank=True, default="")
    progress = models.JSONField(null=True, blank=True)
    logs = models.JSONField(default=list, blank=True)
    worker = models.CharField(max_length=200, blank=True, default="")
    enqueued_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A running attempt's own timeout: set by its claim, which writes only this row
    # (the instance records the claim with its next change); the sweep fires it.
    timeout_at = models.DateTimeField(null=True, blank=True)
    # The trace context of the command that handed it out (TRACING on: a propagator's
    # carrier), so that the worker's span joins that trace across the broker and a restart.
    trace_context = models.JSONField(null=True, blank=True)
    # Held to a Limit (at most limit_max running per limit_key) or a Rate (rate_limit
    # hand-outs per rate_per seconds per rate_key): the keys as computed at hand-out.
    limit_key = models.CharField(max_length=200, blank=True, default="")
    limit_max = models.PositiveIntegerField(null=True, blank=True)
    rate_key = models.CharField(max_length=200, blank=True, default="")
    rate_limit = models.PositiveIntegerField(null=True, blank=True)
    rate_per = models.FloatField(null=True, blank=True)
    # Its outcome (AttemptOutcome as JSON), kept while it is reported and not yet applied.
    result = models.JSONField(null=True, blank=True)
    # When it got its slot and went to the runner (None while it waits, or unlimited).
    handed_out_at = models.DateTimeField(null=True, blank=True)
    # A waiting attempt: when the sweep looks whether its slot is free (its rate's window
    # moves on; or, should the wake-up of a freed slot be lost, the sweep's own look).
    look_again_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Partial: an attempt's row is in each only while the sweep may look for it
            # there (a finished attempt's writes no entry in any of them).
            models.Index(fields=["status", "heartbeat_at"], name="dwf_attempt_running",
                         condition=Q(status="running")),
            models.Index(fields=["status", "enqueued_at"], name="dwf_attempt_queued",
                         condition=Q(status="queued")),
            models.Index(fields=["status", "timeout_at"], name="dwf_attempt_timing",
                         condition=Q(status="running", timeout_at__isnull=False)),
            # Only limited attempts: how many of a key run, and which wait, oldest first.
            models.Index(fields=["limit_key", "status", "enqueued_at"], name="dwf_attempt_limit",
                         condition=~Q(limit_key="")),
            models.Index(fields=["rate_key", "handed_out_at"], name="dwf_attempt_rate",
                         condition=~Q(rate_key="")),
            models.Index(fields=["rate_key", "enqueued_at"], name="dwf_attempt_rate_waiting",
                         condition=Q(status="waiting") & ~Q(rate_key="")),
            models.Index(fields=["status", "look_again_at"], name="dwf_attempt_waiting",
                         condition=Q(status="waiting")),
            models.Index(fields=["status", "finished_at"], name="dwf_attempt_reported",
                         condition=Q(status="reported")),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.target} #{self.number}"


class LimitedKey(models.Model):
    """A key that attempts are held to (``Limit``, ``Rate``). Its row is locked while a
    slot of it is taken or given on, so two workers never both take its last slot."""

    key = models.CharField(max_length=200, primary_key=True)
    # Written by whoever makes the row, and by whoever races that: its upsert takes the
    # row's lock at once (an ignored insert would share it, and two sharers deadlock).
    made_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.key


class Deadline(models.Model):
    """A timer (step timeout, attempt timeout, retry delay), fired by the sweep."""

    instance = models.ForeignKey(WorkflowInstance, on_delete=models.CASCADE,
                                 related_name="deadlines")
    kind = models.CharField(max_length=20)
    token = models.CharField(max_length=64)
    due_at = models.DateTimeField(db_index=True)
    # The trace context of the command that set it (TRACING on), for what fires it.
    trace_context = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token", "kind"], name="dwf_deadline_token_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} at {self.due_at:%Y-%m-%d %H:%M:%S}"


class SweepLease(models.Model):
    """Who sweeps, until when, and when a sweep last ran (one row, ``name="sweep"``).

    The sweepers in django-q2's workers take turns through it: one holds the
    lease and sweeps, the others wait to take over. ``swept_at`` is what the
    admin's banner and the system check read.
    """

    name = models.CharField(max_length=40, primary_key=True)
    holder = models.CharField(max_length=200, blank=True, default="")
    held_until = models.DateTimeField(null=True, blank=True)
    swept_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("sweep lease")

    def __str__(self) -> str:
        return f"{self.name} held by {self.holder or 'nobody'}"


class SweepItem(models.TextChoices):
    """The kinds of what a sweep does, each item its own unit of work."""

    DEADLINE = "deadline", _("Deadline")  # a timer, a step's timeout, a retry's delay, ...
    ATTEMPT_TIMEOUT = "attempt-timeout", _("Attempt timeout")
    SILENT_ATTEMPT = "silent-attempt", _("Silent worker's attempt")
    LIMIT_KEY = "limit-key", _("Limit's key")  # its waiting attempts handed out
    KEPT_SIGNAL = "kept-signal", _("Kept signal")
    SCHEDULE = "schedule", _("Schedule")
    RESULT = "result", _("Worker's result")  # kept on its attempt, not yet applied


class SweepFailure(models.Model):
    """An item of the sweep that raised: tried again after a while, each time later, and
    set aside (quarantined) after ``SWEEP_RETRIES`` failures in a row, until someone tries
    it again. The others go on (``services/sweep_items.py``)."""

    kind = models.CharField(_("kind"), max_length=20, choices=SweepItem.choices)
    key = models.CharField(_("item"), max_length=200)  # its row's key, as text
    instance = models.ForeignKey(WorkflowInstance, verbose_name=_("instance"), null=True,
                                 blank=True, on_delete=models.CASCADE,
                                 related_name="sweep_failures")
    error = models.TextField(_("error"))
    failures = models.PositiveIntegerField(_("failures in a row"), default=1)
    first_failed_at = models.DateTimeField(_("first failed"), default=timezone.now)
    failed_at = models.DateTimeField(_("last failed"), default=timezone.now)
    retry_at = models.DateTimeField(_("tried again at"), null=True, blank=True)
    quarantined_at = models.DateTimeField(_("set aside"), null=True, blank=True)

    class Meta:
        verbose_name = _("sweep failure")
        verbose_name_plural = _("sweep failures")
        constraints = [
            models.UniqueConstraint(fields=["kind", "key"], name="dwf_sweep_failure_item"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.key}"

    @property
    def set_aside(self) -> bool:
        return self.quarantined_at is not None


class TaskStatus(models.TextChoices):
    OPEN = "open", _("Open")
    DONE = "done", _("Done")
    CANCELLED = "cancelled", _("Cancelled")


# A task with no due date sorts after every dated one (a plain index serves the inbox's order
# on every database; NULLS LAST is not portable).
NEVER_DUE = datetime(9999, 12, 31, tzinfo=UTC)


class WorkflowTask(models.Model):
    """A step's task as people find it: the inbox, the task page and the API read these rows.

    The instance's snapshot holds the same task, and the rules judge that one;
    the service writes both in one transaction.
    """

    id = models.UUIDField(primary_key=True, editable=False)
    instance = models.ForeignKey(WorkflowInstance, verbose_name=_("instance"),
                                 on_delete=models.CASCADE, related_name="tasks")
    workflow = models.CharField(_("workflow"), max_length=200)
    step = models.CharField(_("step"), max_length=200)
    title = models.CharField(_("title"), max_length=200)
    status = models.CharField(_("status"), max_length=20, choices=TaskStatus.choices,
                              default=TaskStatus.OPEN)
    candidates = models.JSONField(_("candidates"), default=list)
    # The instance's owner when the task excludes them: nobody decides their own claim.
    excluded_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")
    claimed_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("claimed by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    completed_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("decided by"),
                                     null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    input = models.JSONField(_("input"), null=True, blank=True)
    due_at = models.DateTimeField(_("due"), null=True, blank=True)
    overdue = models.BooleanField(_("overdue"), default=False)
    created_at = models.DateTimeField(_("opened"), default=timezone.now)
    completed_at = models.DateTimeField(_("closed"), null=True, blank=True)
    # The inbox's order, overdue first, then soonest due, then oldest, as plain columns
    # that one index serves on every database (a NULL's place in an order is not portable).
    rank = models.PositiveSmallIntegerField(default=1)  # 0: overdue, 1: not yet
    due_sort = models.DateTimeField(default=NEVER_DUE)
    # Asked by an operation's durable code (``ctx.ask``): the task as the code gave it
    # (its form's JSON Schema, ``show``); a step's task has its step's definition.
    asked = models.JSONField(null=True, blank=True)

    INBOX_ORDER = ("rank", "due_sort", "created_at", "id")

    class Meta:
        verbose_name = _("task")
        verbose_name_plural = _("tasks")
        indexes = [
            models.Index(fields=["instance", "status"], name="dwf_task_instance_status"),
            models.Index(fields=["status", "rank", "due_sort", "created_at", "id"],
                         name="dwf_task_inbox"),
            models.Index(fields=["claimed_by", "status"], name="dwf_task_claimed"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.get_status_display().lower()})"


class JournalEntry(models.Model):
    """One step or wait of an operation's durable code (``engine/journal.py``).

    ``journal`` names one run of an operation, across its attempts. The worker writes
    a step's row as the step returns (one statement, outside the instance's lock), and
    a replay reads them all back at once.
    """

    # No index of its own: the two below begin with it (a step writes one index less).
    instance = models.ForeignKey(WorkflowInstance, on_delete=models.CASCADE,
                                 related_name="journal_entries", db_index=False)
    journal = models.CharField(max_length=64)
    operation = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, default="step")  # step, sleep, signal, task
    value = models.JSONField(null=True, blank=True)
    tries = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(default=timezone.now)
    token = models.CharField(max_length=64, blank=True, default="")  # the attempt's

    class Meta:
        verbose_name = _("journal entry")
        verbose_name_plural = _("journal entries")
        constraints = [models.UniqueConstraint(fields=["journal", "position"],
                                               name="dwf_journal_position")]
        indexes = [models.Index(fields=["instance", "journal"], name="dwf_journal_instance"),
                   # The timeline's newest entries of an instance, whatever their journal.
                   models.Index(fields=["instance", "finished_at"], name="dwf_journal_finished")]

    def __str__(self) -> str:
        return f"{self.operation} #{self.position} {self.kind} {self.name}"


class TaskCandidate(models.Model):
    """Who may act on an open task: one row per candidate (``"group:managers"``).

    Only open tasks have these rows; a closed task keeps its candidates in its own row.
    """

    task = models.ForeignKey(WorkflowTask, on_delete=models.CASCADE,
                             related_name="candidate_rows", db_index=False)
    key = models.CharField(max_length=300)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "key"], name="dwf_candidate_task_key"),
        ]
        indexes = [models.Index(fields=["key", "task"], name="dwf_candidate_key")]

    def __str__(self) -> str:
        return self.key


class SignalStatus(models.TextChoices):
    KEPT = "kept", _("Kept")  # no step waited for it yet (or one was busy: handed over soon)
    TAKEN = "taken", _("Taken")  # a waiting step took it
    HELD = "held", _("Held")  # a paused instance holds it until it resumes
    EXPIRED = "expired", _("Expired")  # kept longer than SIGNAL_RETENTION
    # Kept, then refused by the instance that would take it: its sender may no longer send
    # it there, or its payload breaks the step's or the state's schema (``detail`` says).
    REFUSED = "refused", _("Refused")


class WorkflowSignal(models.Model):
    """A signal sent to a workflow: the record of its delivery, and a kept signal that
    arrived before its step waited (``status="kept"``).

    One row per ``(workflow, name, message_id)``: a provider that sends an event again
    finds the row, and nothing happens twice.
    """

    workflow = models.CharField(_("workflow"), max_length=200)
    name = models.CharField(_("signal"), max_length=200)
    message_id = models.CharField(_("message id"), max_length=200, null=True,  # noqa: DJ001
                                  blank=True, default=None)
    # How it was addressed: one of the three. No constraint in the database: checking it
    # would wait for the instance's row lock (a signal is recorded before it is handed over).
    instance = models.ForeignKey(WorkflowInstance, verbose_name=_("instance"), null=True,
                                 blank=True, on_delete=models.CASCADE,
                                 related_name="signals_sent", db_index=False,
                                 db_constraint=False)
    reference = models.CharField(_("reference"), max_length=200, null=True,  # noqa: DJ001
                                 blank=True, default=None)
    correlation = models.CharField(_("correlation"), max_length=200, null=True,  # noqa: DJ001
                                   blank=True, default=None)
    payload = models.JSONField(_("payload"), null=True, blank=True)
    sender = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("sender"), null=True,
                               blank=True, on_delete=models.SET_NULL, related_name="+")
    # The sender's username when it was sent; "" for code that sent it without a user (it is
    # trusted). A kept signal whose sender was deleted since is not taken for code's own.
    sender_name = models.CharField(_("sender's name"), max_length=150, blank=True, default="")
    status = models.CharField(_("status"), max_length=20, choices=SignalStatus.choices,
                              default=SignalStatus.KEPT)
    # The instances that took it (one, or every one waiting for its correlation).
    taken_by = models.JSONField(_("taken by"), default=list, blank=True)
    received_at = models.DateTimeField(_("received"), default=timezone.now)
    taken_at = models.DateTimeField(_("taken"), null=True, blank=True)
    detail = models.TextField(_("detail"), blank=True, default="")  # why it was refused

    class Meta:
        verbose_name = _("signal")
        verbose_name_plural = _("signals")
        constraints = [
            # NULL message ids do not meet: a signal without one is never a repeat.
            models.UniqueConstraint(fields=["workflow", "name", "message_id"],
                                    name="dwf_signal_message"),
        ]
        indexes = [
            models.Index(fields=["instance", "status"], name="dwf_signal_instance"),
            models.Index(fields=["workflow", "name", "status", "reference"],
                         name="dwf_signal_reference"),
            models.Index(fields=["workflow", "name", "status", "correlation"],
                         name="dwf_signal_correlation"),
            models.Index(fields=["status", "received_at"], name="dwf_signal_kept"),
        ]

    def __str__(self) -> str:
        return f"{self.name} to {self.workflow} ({self.get_status_display().lower()})"


class WorkflowSchedule(models.Model):
    """A schedule's row: whether it is paused, and where it stands. Its definition is in
    code (``Schedule`` in ``workflows.py``); the sweep makes the row on first sight."""

    id = models.CharField(_("schedule"), max_length=200, primary_key=True)
    paused = models.BooleanField(_("paused"), default=False)
    # The due time the sweep looks at next (None: not reckoned yet, or no more due times).
    next_due_at = models.DateTimeField(_("next due"), null=True, blank=True, db_index=True)
    last_due_at = models.DateTimeField(_("last due"), null=True, blank=True)
    last_run = models.ForeignKey(WorkflowInstance, verbose_name=_("last run"), null=True,
                                 blank=True, on_delete=models.SET_NULL, related_name="+")
    skipped = models.PositiveIntegerField(_("due times skipped"), default=0)
    last_skipped_at = models.DateTimeField(_("last skipped"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now)

    class Meta:
        verbose_name = _("schedule")
        verbose_name_plural = _("schedules")

    def __str__(self) -> str:
        return self.id
