"""Idempotency keys: the same key answers the first result, even when requests race.

The key row is inserted in the command's own transaction. A racing request
with the same key waits on the unique index until the first commits, then
finds its row; if the first rolled back, the second goes ahead. What is
stored is neutral (the instance and its revision, or the refusal's code and
message); each interface shows it in its own way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from ..exceptions import IdempotencyConflict, InvalidState, WorkflowNotMoved
from ..models import IdempotencyKey, WorkflowInstance


@dataclass(frozen=True)
class Key:
    """A request's idempotency key and what it asked for (hashed by :func:`fingerprint_of`)."""

    key: str
    fingerprint: str


def scope_of(user: Any) -> str:
    pk = getattr(user, "pk", None)
    return f"user:{pk}" if pk is not None else ""


def fingerprint_of(*parts: Any) -> str:
    """A hash of what a request asked for, to tell a replay from a different request."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def claim(user: Any, key: Key) -> tuple[IdempotencyKey, bool]:
    """The key's row, and whether this request is the first to use it."""
    scope = scope_of(user)
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(scope=scope, key=key.key,
                                                 fingerprint=key.fingerprint), True
    except IntegrityError:
        row = IdempotencyKey.objects.get(scope=scope, key=key.key)
    if row.fingerprint != key.fingerprint:
        raise IdempotencyConflict(key.key)
    return row, False


def remember(row: IdempotencyKey, instance: WorkflowInstance,
             refusal: WorkflowNotMoved | None) -> None:
    row.instance = instance
    row.revision = instance.revision
    row.refusal_code = refusal.code if refusal is not None else ""
    row.refusal_message = refusal.reason if refusal is not None else ""
    row.save(update_fields=["instance", "revision", "refusal_code", "refusal_message"])


def replay(row: IdempotencyKey) -> WorkflowInstance:
    """The instance of the first request, marked ``replayed``; its refusal is raised again."""
    instance = row.instance  # read now, as it stands (the key row was just read too)
    if row.refusal_code == "invalid_state":
        raise InvalidState(row.refusal_message, instance=instance)
    if row.refusal_code:
        raise WorkflowNotMoved(row.refusal_message, row.refusal_code, instance=instance)
    assert instance is not None  # deleting an instance deletes its keys
    instance.replayed = True
    return instance
