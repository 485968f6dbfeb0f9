"""What the instance page shows of an operation's journal (durable code), under its row.

Each entry with its position, name, kind, tries, times and result (a short line that
unfolds into its JSON), and, for an operation whose code waits, what it waits for now (in
the words of the page's waiting part, ``instance_waiting.words_of``). The rows are read in
at most one query per operation that recorded anything, after one that counts them: a
journal of a thousand entries shows its newest :data:`SHOWN`, and says how many it left
out (the API lists them all). While an attempt runs, its journal grows without a new
revision: the live view sends it anew (:func:`live_journals`), as it sends the timeline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from ..models import JournalEntry, WorkflowInstance
from ..reading.waiting import waiting_of
from .instance_waiting import words_of

SHOWN = 50  # the newest entries of a journal that the page shows
BRIEF = 60  # characters of a result on its line; the rest unfolds
TEMPLATE = "admin/django_workflows/workflowinstance/includes/journal.html"
# Its attempt may record entries between two revisions (a claim the instance has not
# recorded yet leaves it queued).
RUNNING = ("queued", "running", "retrying")


@dataclass
class Journal:
    """An operation's journal as the page shows it."""

    operation: str
    step: str  # the operation's
    entries: list[dict[str, Any]] = field(default_factory=list)
    count: int = 0  # entries it holds
    waits: SafeString | str = ""  # what its code waits for now, in words
    open: bool = True  # unfolded: it is what the operation's state is about

    @property
    def omitted(self) -> int:
        return self.count - len(self.entries)


def _entry(row: JournalEntry) -> dict[str, Any]:
    text = json.dumps(row.value, ensure_ascii=False, default=str)
    return {"position": row.position, "name": row.name, "kind": row.kind, "tries": row.tries,
            "started_at": row.started_at, "finished_at": row.finished_at,
            "brief": text if len(text) <= BRIEF else text[:BRIEF - 1] + "…",
            "unfolds": len(text) > BRIEF or isinstance(row.value, dict | list),
            "json": json.dumps(row.value, ensure_ascii=False, indent=2, default=str)}


def journals_of(instance: WorkflowInstance, only: tuple[str, ...] | None = None
                ) -> dict[str, Journal]:
    """The journals of the instance's operations that recorded anything, by operation id
    (``only``: of these operations' statuses)."""
    operations = {op.journal: op for op in instance.snap.operations
                  if op.journal and (only is None or op.status in only)}
    if not operations:
        return {}
    counts = dict(JournalEntry.objects.filter(instance=instance, journal__in=list(operations))
                  .order_by().values_list("journal").annotate(n=Count("pk")))
    waiting = waiting_of(instance.snap)
    found = {}
    for key, count in counts.items():
        op = operations[key]
        rows = JournalEntry.objects.filter(instance=instance, journal=key).order_by(
            "-position")[:SHOWN]
        found[op.id] = Journal(
            op.id, op.step, [_entry(row) for row in reversed(rows)], count,
            waits=words_of(waiting) if waiting is not None and waiting.operation == op.id
            else "", open=op.status not in ("succeeded", "skipped", "cancelled"))
    return found


def positions_of(journals: dict[str, Journal], step: str) -> dict[str, list[int]]:
    """The positions shown of the journals of ``step``'s operations (the current step's:
    those a retry may go on from), by operation id."""
    return {operation: [entry["position"] for entry in journal.entries]
            for operation, journal in journals.items() if journal.step == step}


def with_buttons(journals: dict[str, Journal], buttons: dict[str, dict[int, Any]]) -> None:
    """Each entry shown given its buttons (``buttons[operation][position]``)."""
    for operation, journal in journals.items():
        for entry in journal.entries:
            entry["commands"] = buttons.get(operation, {}).get(entry["position"], [])


def live_journals(request: HttpRequest, instance: WorkflowInstance) -> dict[str, str]:
    """The journals of the operations whose attempt runs now, drawn anew (they grow between
    two revisions); none while nothing runs."""
    running = journals_of(instance, only=RUNNING)
    return {operation: render_to_string(TEMPLATE, {"journal": journal, "instance": instance},
                                        request)
            for operation, journal in running.items()}
