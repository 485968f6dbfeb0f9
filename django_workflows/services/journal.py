"""The journal of durable code in the database (``engine/journal.py``'s store).

A worker reads an operation's entries once per attempt, and writes each new
step in one INSERT as it returns, outside the instance's lock: the step
happened, whatever becomes of the attempt. Two attempts that both ran a step
(a worker taken for dead that was not) keep the first record; the second
takes its value. A retry from a step (``engine/rules/journals.py``) deletes the
entries from there in its own transaction, under the instance's lock, while no
attempt of the operation is out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from .. import engine
from ..clock import to_datetime
from ..conf import workflow_settings
from ..models import JournalEntry


def as_entry(row: JournalEntry) -> engine.JournalEntry:
    return engine.JournalEntry(
        position=row.position, name=row.name, kind=row.kind,  # type: ignore[arg-type]
        value=row.value, tries=row.tries,
        started_at=row.started_at.timestamp() if row.started_at else None,
        finished_at=row.finished_at.timestamp() if row.finished_at else None)


class DatabaseJournal:
    """The :class:`~django_workflows.engine.JournalStore` of one attempt."""

    def __init__(self, instance_id: Any, operation: str, token: str) -> None:
        self.instance_id = instance_id
        self.operation = operation
        self.token = token

    def release(self) -> None:
        """Called in the thread async code's journal used, as its attempt ends: that
        thread's database connection is closed, not left to the garbage collector."""
        connection.close()

    def entries(self, key: str) -> Sequence[engine.JournalEntry]:
        return [as_entry(row) for row in
                JournalEntry.objects.filter(journal=key).order_by("position")]

    def record(self, key: str, entry: engine.JournalEntry) -> engine.JournalEntry:
        size = len(json.dumps(entry.value))
        if size > workflow_settings.MAX_STATE_BYTES:
            raise ValueError(f'The result of step "{entry.name}" is {size} bytes of JSON, '
                             f"over MAX_STATE_BYTES ({workflow_settings.MAX_STATE_BYTES}): "
                             "keep large data elsewhere and journal its key")
        row = JournalEntry(
            instance_id=self.instance_id, journal=key, operation=self.operation,
            position=entry.position, name=entry.name[:200], kind=entry.kind,
            value=entry.value, tries=entry.tries, started_at=to_datetime(entry.started_at),
            finished_at=to_datetime(entry.finished_at) or timezone.now(), token=self.token)
        try:
            if connection.in_atomic_block:  # the code's own transaction: keep it usable
                with transaction.atomic():
                    row.save(force_insert=True)
            else:
                row.save(force_insert=True)
        except IntegrityError:
            return as_entry(JournalEntry.objects.get(journal=key, position=entry.position))
        return entry


def entries_of(instance_id: Any, journal: str | None) -> list[JournalEntry]:
    """An operation's journal as its rows, by position (for the pages and the API)."""
    if not journal:
        return []
    return list(JournalEntry.objects.filter(instance_id=instance_id, journal=journal)
                .order_by("position"))


def journal_length(instance_id: Any, journal: str) -> int:
    """How many entries the journal ``journal`` of an instance holds (``Env.journal_length``)."""
    return JournalEntry.objects.filter(instance_id=instance_id, journal=journal).count()


def truncate(instance_id: Any, journal: str, position: int) -> int:
    """Delete the entries of ``journal`` at ``position`` and after; how many went."""
    deleted, _ = JournalEntry.objects.filter(instance_id=instance_id, journal=journal,
                                             position__gte=position).delete()
    return deleted
