"""The sweep's items, each its own unit of work with its own failure.

An item of a sweep (a deadline, an attempt's timeout, a silent worker's attempt, a
limit's key, a kept signal, a schedule, a worker's result left over) that raises is
recorded as a ``SweepFailure`` with its error, and left alone until its time to be tried
again: ``SWEEP_INTERVAL`` after the first failure, twice that after the second, and so
on up to five minutes. After ``SWEEP_RETRIES`` failures in a row it is set aside
(quarantined): not tried again until someone says so (:func:`retry_set_aside`, the
admin's sweep failures). The others go on: a workflow a deploy removed, a version
without its migration or a poisoned row stops no other timer. A database that fails is
not an item's failure: that ends the sweep's turn, which the next one does again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import BigIntegerField, IntegerField, Q, QuerySet
from django.db.models.fields import AutoFieldMixin
from django.db.models.functions import Cast

from ..conf import workflow_settings
from ..exceptions import Busy
from ..models import SweepFailure

logger = logging.getLogger("django_workflows")

T = TypeVar("T")
M = TypeVar("M", bound=Any)
LONGEST_WAIT = 300.0  # seconds between two tries of an item, at most


def held_back(now: datetime) -> Q:
    """The failures that keep their item from a sweep at ``now``: set aside, or not yet due
    to be tried again."""
    return Q(quarantined_at__isnull=False) | Q(retry_at__gt=now)


def without_held_back(rows: QuerySet[M], kind: str, now: datetime, field: str = "pk"
                      ) -> QuerySet[M]:
    """``rows`` (the items of ``kind``, keyed by ``field``) less those held back at ``now``:
    a bad row at the head of the queue must not hide the others behind it.

    The failures' keys are text: one of a number is read back as a number (the cast is of
    the failures' own column, never of the items': MySQL compares a cast to text in the
    connection's collation, not the column's)."""
    model_field = rows.model._meta.pk if field == "pk" else rows.model._meta.get_field(field)
    failures = SweepFailure.objects.filter(held_back(now), kind=kind)
    keys: QuerySet[Any, Any] = failures.values("key")
    if isinstance(model_field, IntegerField | AutoFieldMixin):
        keys = failures.annotate(number=Cast("key", BigIntegerField())).values("number")
    return rows.exclude(**{f"{field}__in": keys})


def held_back_keys(kind: str, now: datetime) -> set[str]:
    """The keys of the items of ``kind`` held back at ``now`` (few: a set in memory)."""
    return set(SweepFailure.objects.filter(held_back(now), kind=kind)
               .values_list("key", flat=True))


class Items:
    """The items of one kind in one sweep: :meth:`run` does one, and records how it went."""

    def __init__(self, kind: str, now: datetime) -> None:
        self.kind, self.now = kind, now
        self.failed = 0
        self._failing: set[str] | None = None  # keys that failed before, read once

    def run(self, key: Any, instance_id: Any, work: Callable[[], T]) -> T | None:
        """``work()`` for the item ``key`` (of ``instance_id``, if it has one, or a function
        that finds it); None when it raised (recorded) or its instance was busy (the next
        sweep looks again)."""
        key = str(key)
        try:
            done = work()
        except Busy:
            return None
        except (OperationalError, InterfaceError):
            raise  # the database, not this item: the turn ends, the next one tries again
        except Exception as error:
            self.failed += 1
            if callable(instance_id):
                instance_id = instance_id()
            record_failure(self.kind, key, instance_id, error, self.now)
            return None
        self._recovered(key)
        return done

    def held_back(self) -> set[str]:
        """The keys of this kind held back now (few: a set in memory)."""
        return held_back_keys(self.kind, self.now)

    def _recovered(self, key: str) -> None:
        if self._failing is None:
            self._failing = set(SweepFailure.objects.filter(kind=self.kind)
                                .values_list("key", flat=True))
        if key in self._failing:
            SweepFailure.objects.filter(kind=self.kind, key=key).delete()
            self._failing.discard(key)


def record_failure(kind: str, key: str, instance_id: Any, error: BaseException,
                   now: datetime) -> SweepFailure | None:
    """Record that the item failed again: when to try it next, or that it is set aside."""
    logger.error("The sweep could not do %s %s (instance %s); it tries again later",
                 kind, key, instance_id, exc_info=error)
    text = f"{type(error).__name__}: {error}"[:4000]
    try:
        with transaction.atomic():
            found = (SweepFailure.objects.select_for_update().filter(kind=kind, key=key)
                     .first())
            failure = found or SweepFailure(kind=kind, key=key, first_failed_at=now,
                                            failures=0)
            failure.failures += 1
            failure.error, failure.failed_at = text, now
            failure.instance_id = instance_id
            if failure.failures >= int(workflow_settings.SWEEP_RETRIES):
                failure.quarantined_at, failure.retry_at = failure.quarantined_at or now, None
                logger.error("The sweep set %s %s aside after %d failures: %s", kind, key,
                             failure.failures, text)
            else:
                failure.retry_at = now + timedelta(seconds=wait_after(failure.failures))
            failure.save()
    except IntegrityError:  # its instance was deleted meanwhile, or another sweeper wrote it
        return None
    return failure


def wait_after(failures: int) -> float:
    """Seconds before an item that failed ``failures`` times in a row is tried again."""
    return min(float(workflow_settings.SWEEP_INTERVAL) * 2.0 ** (failures - 1), LONGEST_WAIT)


def retry_set_aside(failures: Iterable[SweepFailure] | QuerySet[SweepFailure]) -> int:
    """Let the sweep try these items again at once (their cause was mended: a workflow
    registered again, a migration added); how many."""
    ids = [failure.pk for failure in failures]
    deleted, _ = SweepFailure.objects.filter(pk__in=ids).delete()
    return deleted
