"""Row locks: an instance's tree is locked root first, then down its nested chain.

Always in that order, so a parent command and a child command never deadlock.
How long a command waits for a lock is bounded; then it raises :class:`Busy`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from uuid import UUID

from django.db import OperationalError, connection

from ..exceptions import Busy, InstanceNotFound
from ..models import WorkflowInstance
from .statements import Statements, statements, whole_seconds

LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for lock_timeout
# MariaDB/MySQL's error numbers for a row lock not granted in time: 1205 (a wait that timed
# out, and MariaDB's NOWAIT) and 3572 (MySQL 8's NOWAIT). Never 1213, a deadlock: our lock
# order rules it out, and it is reported as the bug it would be.
INNODB_LOCK_NOT_GRANTED = (1205, 3572)


def is_lock_timeout(error: BaseException) -> bool:
    cause = error.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if code == LOCK_NOT_AVAILABLE or "database is locked" in str(error):
        return True
    # MySQLdb's errors carry the server's error number first (the others, a message).
    number = getattr(cause, "args", (None,))[:1]
    return bool(number) and number[0] in INNODB_LOCK_NOT_GRANTED


@contextmanager
def busy_as_error(seconds: float) -> Iterator[None]:
    """Turn a lock wait that timed out into :class:`Busy` (wrap the transaction in it)."""
    try:
        yield
    except OperationalError as error:
        if is_lock_timeout(error):
            raise Busy(f"The instance stayed locked for more than {seconds:g}s; "
                       "try again") from error
        raise


@contextmanager
def bounded_wait(seconds: float) -> Iterator[None]:
    """Wait at most ``seconds`` for each row lock taken inside.

    Use it inside a transaction. PostgreSQL: ``lock_timeout``, local to the
    transaction. MariaDB/MySQL: the session's ``innodb_lock_wait_timeout`` in
    whole seconds (rounded up), put back afterwards, also after an error. SQLite
    takes its one write lock when the transaction begins
    (``transaction_mode="IMMEDIATE"``) and waits as long as its ``timeout`` option
    says.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('lock_timeout'), "
                           "set_config('lock_timeout', %s, true)",
                           [f"{max(int(seconds * 1000), 1)}ms"])
            previous = cursor.fetchone()[0]
        yield
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
    elif connection.vendor == "mysql":
        with connection.cursor() as cursor:
            # Kept in Python, not in a session variable, so that bounded waits can nest.
            cursor.execute("SELECT @@SESSION.innodb_lock_wait_timeout")
            previous = cursor.fetchone()[0]
            cursor.execute("SET SESSION innodb_lock_wait_timeout = %s", [whole_seconds(seconds)])
        try:
            yield
        finally:  # the setting outlives the transaction: put it back whatever happened
            with connection.cursor() as cursor:
                cursor.execute("SET SESSION innodb_lock_wait_timeout = %s", [previous])
    else:
        yield


def _locked(pk: object, within: float | None = None) -> WorkflowInstance:
    row = statements().locked(pk, within=within)
    if row is None:
        raise InstanceNotFound(f"No workflow instance {pk}")
    return row


def lock_tree(instance_id: UUID | str, *, timeout: float) -> list[WorkflowInstance]:
    """Lock the tree ``instance_id`` belongs to; return its chain, root first.

    A child no longer attached to its parent (a later step started another
    one) is its own tree.
    """
    built = statements()
    if built.finds_root_unlocked:
        return _lock_tree_found_unlocked(built, instance_id, timeout)
    one_trip = built.bounded_root is not None
    # The common case, an instance without a parent, costs one query: where the database
    # takes several statements at once, the bounded wait comes in the same round trip.
    root = built.locked_root_within(instance_id, timeout) if one_trip else None
    if root is not None and not root.nested_id:
        return [root]
    with bounded_wait(timeout):
        if root is None and not one_trip:
            root = built.locked(instance_id, root=True)
        if root is None:
            root = _locked(root_id(instance_id))
        return _chain_from(root, instance_id)


def _lock_tree_found_unlocked(built: Statements, instance_id: UUID | str, timeout: float
                              ) -> list[WorkflowInstance]:
    """MariaDB/MySQL: one statement finds the root without locking and locks it.

    MariaDB bounds each wait in its statement; MySQL inside :func:`bounded_wait`.
    """
    with nullcontext() if built.waits_in_statement else bounded_wait(timeout):
        root = built.locked_root_of(instance_id, within=timeout)
        if root is None:  # no instance (InstanceNotFound), or parents in a loop
            root = _locked(root_id(instance_id), timeout)
        return _chain_from(root, instance_id, timeout)


def _chain_from(root: WorkflowInstance, instance_id: object, within: float | None = None
                ) -> list[WorkflowInstance]:
    """Lock down the nested chain from the locked ``root``; the chain ``instance_id`` is in."""
    chain = [root]
    while chain[-1].nested_id:
        chain.append(_locked(chain[-1].nested_id, within))
    if str(instance_id) not in {str(row.pk) for row in chain}:
        chain = [_locked(instance_id, within)]
    return chain


def root_id(instance_id: UUID | str) -> UUID | str:
    """The id of the instance's topmost parent, found without locking (a parent never changes)."""
    seen = set()
    current: UUID | str = instance_id
    while True:
        parent = WorkflowInstance.objects.filter(pk=current).values_list("parent_id", flat=True)
        found = list(parent)
        if not found:
            raise InstanceNotFound(f"No workflow instance {instance_id}")
        if found[0] is None or found[0] in seen:
            return current
        seen.add(current)
        current = found[0]
