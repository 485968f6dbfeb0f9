"""What an operator does to an operation's journal (durable code): retry from one of its steps.

``retry(operation=..., from_step=n)`` deletes the entries of the operation's journal at
position ``n`` and after, in the retry's own transaction (the effect
:class:`~..outcome.TruncateJournal`); the operation is handed out again, and its code
answers the steps before ``n`` from the journal and runs ``n`` and the steps after it
again. :func:`retry_from` holds its checks (``docs/rules.md``, retry), which the
service judges on the rows under the lock: the journal's length is a count of its rows
(``Env.journal_length``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..change import Change
from ..errors import Refused
from ..outcome import TruncateJournal
from .work import DONE, put_operation


@dataclass(frozen=True)
class RetryFrom:
    """The entry of an operation's journal that a retry goes on from."""

    operation: str
    journal: str
    position: int
    length: int  # how many entries the journal holds now

    @property
    def confirm(self) -> str:
        """What a person confirms first: the steps recorded from there run again."""
        dropped = self.length - self.position
        what = "its entry from there is" if dropped == 1 else \
            f"its {dropped} entries from there are"
        return (f'Retry from entry {self.position} of the journal of operation '
                f'"{self.operation}": {what} deleted, and the code runs those steps again')

    @property
    def data(self) -> dict[str, Any]:
        """What the ``retry`` event records of it."""
        return {"operation": self.operation, "from_step": self.position,
                "entries_deleted": self.length - self.position}


def retry_from(c: Change, operation_id: str | None, position: int | None) -> RetryFrom | None:
    """The journal entry ``retry`` goes on from, once checked; None for a plain retry
    (neither given). Refused: one given without the other (``retry_from_incomplete``), an
    operation that is not the current step's (``no_operation``), one with no journal
    entry (``no_journal``), one still in flight (``operation_in_flight``) or done
    (``operation_done``), a position the journal does not hold (``no_journal_entry``)."""
    if operation_id is None and position is None:
        return None
    if operation_id is None or position is None:
        raise Refused("retry_from_incomplete", "A retry from a step names both the operation "
                                               "(operation) and the position of the entry "
                                               "of its journal (from_step)")
    step = c.step
    if step is None or all(o.id != operation_id for o in step.operations):
        where = f'Workflow step "{step.id}"' if step is not None else \
            f"{c.name}, with no current step,"
        raise Refused("no_operation", f'{where} has no operation "{operation_id}"')
    operation = c.snap.operation(operation_id)
    journal = operation.journal if operation is not None else None
    length = c.env.journal_length(c.snap.id, journal) if journal else 0
    if operation is None or journal is None or length == 0:
        raise Refused("no_journal", f'Operation "{operation_id}" has no journal: its code '
                                    "recorded no step to retry from")
    if operation.in_flight:
        raise Refused("operation_in_flight", f'Operation "{operation_id}" is '
                                             f"{operation.status}: its journal can be "
                                             "retried from a step once it stopped")
    if operation.status in DONE:
        done = "succeeded" if operation.status == "succeeded" else "was skipped"
        raise Refused("operation_done", f'Operation "{operation_id}" {done}: a retry does '
                                        "not run it again")
    if not 0 <= position < length:
        raise Refused("no_journal_entry", f'The journal of operation "{operation_id}" has '
                                          f"no entry at position {position}: it holds "
                                          f"{length} (0 to {length - 1})")
    return RetryFrom(operation_id, journal, position, length)


def truncate(c: Change, found: RetryFrom) -> None:
    """The entries from ``found`` go, in the retry's transaction; so does what woke a
    wait from there (the wait waits again)."""
    c.effect(TruncateJournal(c.snap.id, found.journal, found.position))
    operation = c.snap.operation(found.operation)
    if operation is not None and operation.woken is not None \
            and operation.woken.get("position", 0) >= found.position:
        put_operation(c, replace(operation, woken=None))
