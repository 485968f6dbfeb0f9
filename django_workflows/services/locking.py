"""Row locks: an instance's tree is locked root first, then down its nested chain.

Always in that order, so a parent command and a child command never deadlock.
How long a command waits for a lock is bounded; then it raises :class:`Busy`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError, connection

from ..exceptions import Busy, InstanceNotFound
from ..models import WorkflowInstance
from .statements import statements

LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for lock_timeout


def is_lock_timeout(error: BaseException) -> bool:
    cause = error.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code == LOCK_NOT_AVAILABLE or "database is locked" in str(error)


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
    """Wait at most ``seconds`` for row locks taken inside (PostgreSQL's lock_timeout).

    Use it inside a transaction. SQLite takes its one write lock when the
    transaction begins (``transaction_mode="IMMEDIATE"``) and waits as long
    as its ``timeout`` option says.
    """
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout'), "
                       "set_config('lock_timeout', %s, true)",
                       [f"{max(int(seconds * 1000), 1)}ms"])
        previous = cursor.fetchone()[0]
    yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])


def _locked(pk: object) -> WorkflowInstance:
    row = statements().locked(pk)
    if row is None:
        raise InstanceNotFound(f"No workflow instance {pk}")
    return row


def lock_tree(instance_id: object, *, timeout: float) -> list[WorkflowInstance]:
    """Lock the tree ``instance_id`` belongs to; return its chain, root first.

    A child no longer attached to its parent (a later step started another
    one) is its own tree.
    """
    built = statements()
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
        chain = [root]
        while chain[-1].nested_id:
            chain.append(_locked(chain[-1].nested_id))
        if str(instance_id) not in {str(row.pk) for row in chain}:
            chain = [_locked(instance_id)]
    return chain


def root_id(instance_id: object) -> object:
    """The id of the instance's topmost parent, found without locking (a parent never changes)."""
    seen = set()
    current: object = instance_id
    while True:
        parent = WorkflowInstance.objects.filter(pk=current).values_list("parent_id", flat=True)
        found = list(parent)
        if not found:
            raise InstanceNotFound(f"No workflow instance {instance_id}")
        if found[0] is None or found[0] in seen:
            return current
        seen.add(current)
        current = found[0]
