"""Idempotency keys: the same key answers the first result, even when requests race.

The key row is inserted in the command's own transaction. A racing request
with the same key waits on the unique index until the first commits, then
finds its row; if the first rolled back, the second goes ahead.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction

from ..exceptions import IdempotencyConflict, WorkflowNotMoved
from ..models import IdempotencyKey


def scope_of(user: Any) -> str:
    pk = getattr(user, "pk", None)
    return f"user:{pk}" if pk is not None else ""


def fingerprint_of(*parts: Any) -> str:
    """A hash of what a request asked for, to tell a replay from a different request."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def claim(user: Any, key: str, fingerprint: str) -> tuple[IdempotencyKey, bool]:
    """The key's row, and whether this request is the first to use it."""
    scope = scope_of(user)
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(scope=scope, key=key,
                                                 fingerprint=fingerprint), True
    except IntegrityError:
        row = IdempotencyKey.objects.get(scope=scope, key=key)
    if row.fingerprint != fingerprint:
        raise IdempotencyConflict(key)
    return row, False


def remember(row: IdempotencyKey, instance: Any, status_code: int, response: Any) -> None:
    row.instance = instance
    row.status_code = status_code
    row.response = response
    row.save(update_fields=["instance", "status_code", "response"])


def replay(row: IdempotencyKey) -> Any:
    """The instance of the first request; its refusal is raised again."""
    response = row.response or {}
    if (row.status_code or 0) >= 400 and "code" in response:
        raise WorkflowNotMoved(response.get("detail", ""), response["code"],
                               instance=row.instance)
    instance = row.instance  # read now, as it stands (the key row was just read too)
    if instance is not None:
        instance.replayed = (row.status_code, row.response)
    return instance
