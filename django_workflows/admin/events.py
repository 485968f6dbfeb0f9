"""The event log in the admin: each event as a sentence, its raw JSON behind a toggle;
read-only, newest first, fast on a big table.

:func:`sentence` says what an event means ("Attempt 2 of charge-card failed after
3.1 s: Payment provider unavailable (503)"), with the titles of the definition and the
times of the attempts' rows; every type in ``engine.EVENT_TYPES`` has one
(``SENTENCES``), and a type it does not know still reads as words.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from .. import registry
from ..engine import BY_PERSON, EVENT_TYPES
from ..engine.messages import INTERRUPTED_OPERATION
from ..graph.timeline import Titles, span_words
from ..models import Attempt, WorkflowEvent
from .changelist import EstimatedCountPaginator
from .instance_waiting import when
from .storable_lookups import StorableLookupsAdmin
from .timeline import titles_of

# -- an event in words ---------------------------------------------------------------------


@dataclass(frozen=True)
class AttemptTimes:
    """When an attempt was queued, claimed and finished, and by which worker."""

    number: int
    enqueued_at: datetime
    claimed_at: datetime | None = None
    finished_at: datetime | None = None
    worker: str = ""


@dataclass(frozen=True)
class Facts:
    """What the sentences name things by: the definition's titles, and the attempts' times
    by operation (oldest first)."""

    titles: Titles = field(default_factory=Titles)
    attempts: Mapping[str, list[AttemptTimes]] = field(default_factory=dict)

    def attempt(self, operation: str, number: int | None, at: datetime) -> AttemptTimes | None:
        """The attempt of ``operation`` an event at ``at`` speaks of: ``number``, or the
        latest queued by then."""
        found = [a for a in self.attempts.get(operation, ())
                 if a.enqueued_at <= at and (number is None or a.number == number)]
        return found[-1] if found else None


def facts_for(workflow: str, events: Iterable[Any], instance_id: Any = None) -> Facts:
    """The facts the sentences of ``events`` need: one query for the attempts of the
    operations they name (none when they name none)."""
    operations = {str(e.data.get("operation")) for e in events
                  if isinstance(e.data, dict) and e.data.get("operation")}
    attempts: dict[str, list[AttemptTimes]] = {}
    if operations and instance_id is not None:
        for row in (Attempt.objects.filter(instance_id=instance_id, kind="operation",
                                           target__in=operations)
                    .order_by("enqueued_at")
                    .values("target", "number", "enqueued_at", "claimed_at", "finished_at",
                            "worker")):
            attempts.setdefault(row["target"], []).append(AttemptTimes(
                row["number"], row["enqueued_at"], row["claimed_at"], row["finished_at"],
                row["worker"]))
    return Facts(titles_of(registry.find(workflow)), attempts)


def _step(facts: Facts, key: str) -> str:
    title = facts.titles.step(key)
    return f"“{title}”" if title == key else f"“{title}” ({key})"


CANDIDATES = {"group": "the group {}", "perm": "whoever has {}", "user": "user {}"}


def _list(values: Any) -> str:
    """Candidates as people say them: ``group:managers`` is "the group managers"."""
    words = []
    for value in values or ():
        kind, _, name = str(value).partition(":")
        words.append(CANDIDATES[kind].format(name) if kind in CANDIDATES and name
                     else str(value))
    return ", ".join(words) or "nobody"


def _briefly(value: Any, most: int = 160) -> str:
    """A value as a short line: ``decision: approved, comment: Order chairs through IT``."""
    if isinstance(value, dict):
        text = ", ".join(f"{k}: {_briefly(v, most)}" for k, v in value.items())
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= most else text[: most - 1] + "…"


def _at(epoch: Any) -> str:
    try:
        return when(datetime.fromtimestamp(float(epoch)).astimezone())
    except (TypeError, ValueError, OverflowError, OSError):
        return str(epoch)


def _took(attempt: AttemptTimes | None, ended: datetime) -> str:
    """`` after 3.1 s``: how long the attempt ran, when its row says when it started."""
    if attempt is None or attempt.claimed_at is None:
        return ""
    end = attempt.finished_at or ended
    return f" after {span_words((end - attempt.claimed_at).total_seconds())}"


def _failed(event: Any, facts: Facts) -> str:
    data = event.data
    operation = str(data.get("operation", ""))
    retrying = event.type == "operation-retrying"
    number = int(data.get("attempt") or 2) - 1 if retrying else None
    attempt = facts.attempt(operation, number, event.created_at)
    number = number or (attempt.number if attempt else None)
    error = _error(event)
    head = f"Attempt {number} of {operation}" if number else operation
    text = f"{head} failed{_took(attempt, event.created_at)}" + (f": {error}" if error else "")
    if retrying:
        delay = float(data.get("delay") or 0)
        later = f"in {span_words(delay)}" if delay else "now"
        return f"{text}; attempt {data.get('attempt')} {later}"
    if event.error == INTERRUPTED_OPERATION:
        return f"{head} lost its worker: {error}"
    return f"{text}; no attempts left"


def _error(event: Any) -> str:
    error = event.error
    if isinstance(error, dict):
        error = error.get("message") or json.dumps(error, ensure_ascii=False)
    return str(error or event.data.get("error") or "")


def _attempt_ran(event: Any, facts: Facts, verb: str) -> str:
    operation = str(event.data.get("operation", ""))
    number = event.data.get("attempt")
    attempt = facts.attempt(operation, int(number) if number else None, event.created_at)
    took = _took(attempt, event.created_at) if verb == "succeeded" else ""
    where = f" on {attempt.worker}" if verb == "started" and attempt and attempt.worker else ""
    return f"Attempt {number or '?'} of {operation} {verb}{where}{took}"


def _signal(event: Any, facts: Facts) -> str:
    data = event.data
    sender = f" from {data['sender']}" if data.get("sender") else ""
    message = f" (message {data['message_id']})" if data.get("message_id") else ""
    kept = "; it had come before the step waited, and was kept" if data.get("kept") else ""
    return f"The signal {data.get('signal')} arrived{sender}{message}{kept}"


def _resume(event: Any, facts: Facts) -> str:
    data = event.data
    if data.get("interrupted"):
        return f"{data['interrupted']} lost its worker: its work must be retried"
    held = int(data.get("held") or 0)
    return "Resumed" + (f"; {held} input{'s' if held != 1 else ''} held while paused "
                        "applied now" if held else "")


def _held(event: Any, facts: Facts) -> str:
    data = event.data
    if data.get("target"):  # a worker's report
        what = (f"the result of {data.get('kind')} {data['target']} "
                f"({'succeeded' if data.get('ok') else 'not succeeded'})")
    elif data.get("signal"):
        what = f"the signal {data['signal']}"
    elif data.get("kind"):
        what = f"the {data['kind']} deadline"
    else:
        what = str(data.get("command") or "a command")
    return f"While paused, {what} came: it is held and applied on resume"


def _rollback(event: Any, facts: Facts) -> str:
    phase = event.data.get("phase")
    return {"started": "Rollback started: the work done is undone, newest first",
            "resumed": "Rollback resumed where it stopped",
            "finished": "Rollback finished: the instance is idle again, with its initial "
                        "state"}.get(phase, f"Rollback {phase or ''}".strip())


def _validate(event: Any, facts: Facts) -> str:
    errors = event.data.get("errors") or []
    if not errors:
        return f"{_step(facts, event.step)} was checked: nothing to fix"
    return (f"{_step(facts, event.step)} was checked: {len(errors)} thing"
            f"{'s' if len(errors) != 1 else ''} to fix: {'; '.join(map(str, errors))}")


def _task(event: Any, facts: Facts) -> str:
    """Its title: its step's task's, or its own when durable code asked it."""
    return f"“{(event.data or {}).get('title') or facts.titles.task(event.step)}”"


def _who(event: Any) -> str:
    return event.actor_name or "someone"


SENTENCES: dict[str, Callable[[Any, Facts], str]] = {
    "start": lambda e, f: "Started",
    "resume": _resume,
    "step-enter": lambda e, f: f"Entered {_step(f, e.step)}",
    "step-leave": lambda e, f: f"Left {_step(f, e.step)}: done",
    "validate": _validate,
    "skip": lambda e, f: (f"{_step(f, e.step)} was skipped: it does not apply now"
                          if e.data.get("unavailable") else f"{_step(f, e.step)} was skipped"),
    "back": lambda e, f: f"Went back to {_step(f, e.step)}",
    "retry": lambda e, f: (
        f"Retried {_step(f, e.step)} from entry {e.data['from_step']} of the journal of "
        f"{e.data.get('operation')}: the entries from there were deleted, and its code runs "
        "those steps again" if e.data.get("from_step") is not None
        else f"Retried {_step(f, e.step)}: its unfinished work runs again"),
    "cancel": lambda e, f: "Cancelled" + (f": {e.data['reason']}" if e.data.get("reason")
                                          else ""),
    "rollback": _rollback,
    "compensate": lambda e, f: f"Undid {e.data.get('item')}" + (
        f" (it returned {_briefly(e.data['result'], 80)})" if e.data.get("result") is not None
        else ""),
    "complete": lambda e, f: "Completed",
    "error": lambda e, f: (f"Undoing {e.data['item']} failed: {_error(e)}"
                           if e.data.get("item") else
                           f"Failed at {_step(f, e.step)}: {_error(e)}" if e.step
                           else f"Failed: {_error(e)}"),
    "state-update": lambda e, f: "The state was changed",
    "operation-queued": lambda e, f: (
        f"Attempt {e.data.get('attempt', 1)} of {e.data.get('operation')} is queued for a "
        "worker"),
    "operation-started": lambda e, f: _attempt_ran(e, f, "started"),
    "operation-progress": lambda e, f: (
        f"{e.data.get('operation')} reported progress"
        + (f": {_briefly(e.data.get('progress'), 80)}" if e.data.get("progress") else "")),
    "operation-succeeded": lambda e, f: _attempt_ran(e, f, "succeeded"),
    "operation-failed": _failed,
    "operation-retrying": _failed,
    "operation-cancelled": lambda e, f: f"{e.data.get('operation')} was stopped" + (
        f": {e.data['reason']}" if e.data.get("reason") else ""),
    "operation-blocked": lambda e, f: (f"{e.data.get('operation')} is blocked, waiting for "
                                       f"a person: {_error(e)}"),
    "operation-skipped": lambda e, f: f"{e.data.get('operation')} was skipped by hand",
    "branch-started": lambda e, f: f"Branch {e.data.get('branch')} started on a worker",
    "branch-succeeded": lambda e, f: f"Branch {e.data.get('branch')} succeeded",
    "branch-failed": lambda e, f: f"Branch {e.data.get('branch')} failed: {_error(e)}",
    "branch-cancelled": lambda e, f: f"Branch {e.data.get('branch')} was stopped" + (
        f": {e.data['reason']}" if e.data.get("reason") else ""),
    "compensation-started": lambda e, f: f"Undoing {e.data.get('item')} started on a worker",
    "attempt-stopped": lambda e, f: (
        f"The {e.data.get('kind')} {e.data.get('target')} that was told to stop "
        + ("finished; its result was discarded" if e.data.get("finished")
           else "stopped") + (f" ({e.data['reason']})" if e.data.get("reason") else "")),
    "task-open": lambda e, f: (f"The task {_task(e, f)} opened for "
                               f"{_list(e.data.get('candidates'))}"),
    "task-claim": lambda e, f: f"{_who(e)} claimed the task {_task(e, f)}",
    "task-release": lambda e, f: f"{_who(e)} released the task {_task(e, f)}: others may "
                                 "claim it",
    "task-complete": lambda e, f: f"{_who(e)} decided the task {_task(e, f)}" + (
        f": {_briefly(e.data['input'])}" if e.data.get("input") else ""),
    "task-overdue": lambda e, f: f"The task {_task(e, f)} is overdue" + (
        f"; now {_list(e.data['escalated_to'])} may decide too"
        if e.data.get("escalated_to") else ""),
    "task-cancel": lambda e, f: f"The task {_task(e, f)} was cancelled" + (
        f": {e.data['reason']}" if e.data.get("reason") else ""),
    "signal-wait": lambda e, f: (
        f"Waiting for the signal {e.data.get('signal')}"
        + (f" (correlation {e.data['correlation']})" if e.data.get("correlation") else "")
        + (f" until {_at(e.data['until'])}" if e.data.get("until") else "")),
    "signal": _signal,
    "signal-timeout": lambda e, f: (
        f"The signal {e.data.get('signal')} did not come in time: the step "
        + ("goes on without it" if e.data.get("on_timeout") == "continue" else "fails")),
    "timer-wait": lambda e, f: f"Waiting until {_at(e.data.get('until'))} (timer)",
    "timer-fire": lambda e, f: "The timer fired" + (
        f" (it was due {_at(e.data['due'])})" if e.data.get("due") else ""),
    "pause": lambda e, f: "Paused" + (f": {e.data['reason']}" if e.data.get("reason") else
                                      "; new work waits until it is resumed"),
    "held": _held,
    "rewind": lambda e, f: (f"Rewound to {_step(f, e.step)}"
                            + (f", leaving {', '.join(map(str, e.data['steps_left']))}"
                               if e.data.get("steps_left") else "")),
}


def sentence(event: Any, facts: Facts | None = None) -> str:
    """What ``event`` means, in a sentence (a type without one of its own still reads)."""
    facts = facts or Facts()
    said = SENTENCES.get(event.type)
    if said is None:
        words = str(event.type).replace("-", " ").capitalize()
        return words + (f" at {_step(facts, event.step)}" if event.step else "")
    return said(event, facts)


def told(events: list[Any], workflow: str, instance_id: Any = None) -> list[Any]:
    """``events`` given ``sentence`` and ``data_json`` (the raw JSON behind the toggle), with
    at most one query."""
    facts = facts_for(workflow, events, instance_id)
    for event in events:
        event.actor_name = str(event.actor) if event.actor_id else None
        event.sentence = sentence(event, facts)
        raw = {"data": event.data} | ({"error": event.error} if event.error else {})
        event.data_json = json.dumps(raw, ensure_ascii=False, indent=2, default=str)
    return events


# -- the event admin ----------------------------------------------------------------------


PEOPLES_ACTS = "people"  # the filter's choice of every type a person's command records


class EventTypeFilter(admin.SimpleListFilter):
    title = "type"
    parameter_name = "type"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(PEOPLES_ACTS, "people's acts"), *((name, name) for name in EVENT_TYPES)]

    def queryset(self, request: Any, queryset: Any) -> Any:
        if self.value() == PEOPLES_ACTS:
            return queryset.filter(type__in=BY_PERSON)
        return queryset.filter(type=self.value()) if self.value() else queryset


@admin.register(WorkflowEvent)
class WorkflowEventAdmin(StorableLookupsAdmin[WorkflowEvent]):
    list_display = ("sequence", "type", "instance_link", "what_happened", "actor", "revision",
                    "created_at")
    list_filter = (EventTypeFilter,)
    search_fields = ("instance__id",)  # shown as the search box; see get_search_results
    search_help_text = "An instance id: its events."
    list_select_related = ("instance", "actor")
    ordering = ("-id",)
    sortable_by = ()
    list_per_page = 100
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = EstimatedCountPaginator
    actions = None

    def get_queryset(self, request: HttpRequest) -> Any:
        # The instance link needs the workflow's id, not a copy of the state on every row.
        return super().get_queryset(request).defer("instance__state", "instance__snapshot")

    @admin.display(description="instance")
    def instance_link(self, event: WorkflowEvent) -> str:
        url = reverse("admin:django_workflows_workflowinstance_change", args=[event.instance_id])
        return format_html('<a href="{}">{} {}…</a>', url,
                           event.instance.workflow, str(event.instance_id)[:8])

    @admin.display(description="what happened")
    def what_happened(self, event: WorkflowEvent) -> str:
        shown: Any = event
        shown.actor_name = str(event.actor) if event.actor_id else None
        return sentence(shown, Facts(titles_of(registry.find(event.instance.workflow))))

    def get_search_results(self, request: HttpRequest, queryset: Any,
                           search_term: str) -> tuple[Any, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            return queryset.filter(instance_id=uuid.UUID(term)), False
        except ValueError:
            return queryset.none(), False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
