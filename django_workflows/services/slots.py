"""Slots: attempts held to a ``Limit`` or a ``Rate`` (``engine/slots.py``) wait in our
tables, not in the broker, until their key has room.

- **Taking.** A command that hands out limited attempts locks their keys' rows
  (``LimitedKey``, in key order, after the instance's row) and counts. An attempt that
  fits is queued and goes to the runner; one that does not waits (status ``waiting``),
  holding no worker. One that arrives while others of its key wait, waits behind them.
- **Giving on.** Whatever ends a limited attempt (its result, its recovery, a stop)
  frees its slot by leaving queued or running; then :func:`hand_out_waiting`, in a transaction
  of its own, locks the key and hands out its oldest waiting attempts that fit. The
  count is of what runs, never a counter: a crash loses no slot, since the recovered
  attempt is interrupted and so no longer counted.
- **Looking again.** A rate's oldest waiting attempt has ``look_again_at``, when its
  window lets it start; the sweep releases it then. The sweep also releases every key
  with waiting work each ``SWEEP_INTERVAL``, so a release lost with its process (or its
  attempt's instance deleted) holds nothing up for longer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Q

from .. import clock
from ..conf import workflow_settings
from ..models import Attempt, AttemptStatus, LimitedKey
from .dispatch import hand_out

logger = logging.getLogger("django_workflows")

ACTIVE = (AttemptStatus.QUEUED, AttemptStatus.RUNNING)  # holding a slot
UNCLAIMED = (AttemptStatus.QUEUED, AttemptStatus.WAITING)  # no worker has it yet
PAGE = 16  # waiting attempts a release reads at a time, per key
BATCH = 200  # keys a sweep looks at


def lock_keys(keys: Iterable[str]) -> None:
    """Lock the rows of ``keys`` in key order (each made on first use)."""
    wanted = sorted(set(keys) - {""})
    if not wanted:
        return

    def lock() -> int:
        return len(LimitedKey.objects.select_for_update().filter(key__in=wanted)
                   .order_by("key").values_list("key", flat=True))

    if lock() < len(wanted):
        target = connections[router.db_for_write(LimitedKey)].features \
            .supports_update_conflicts_with_target  # MySQL upserts on any unique key
        LimitedKey.objects.bulk_create([LimitedKey(key=key) for key in wanted],
                                       update_conflicts=True, update_fields=["made_at"],
                                       unique_fields=["key"] if target else None)
        lock()


class Tally:
    """What runs and what started under the keys this transaction locked, counted once per
    key and kept up to date as it hands out."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self._running: dict[str, int] = {}
        self._starts: dict[str, list[datetime]] = {}  # per rate key: newest first
        self._waiting: dict[str, bool] = {}

    def running(self, key: str) -> int:
        if key not in self._running:
            self._running[key] = Attempt.objects.filter(limit_key=key,
                                                        status__in=ACTIVE).count()
        return self._running[key]

    def starts(self, attempt: Attempt) -> list[datetime]:
        """The newest starts of its rate key in the window, at most its limit of them."""
        key = attempt.rate_key
        if key not in self._starts:
            since = self.now - timedelta(seconds=attempt.rate_per or 0)
            self._starts[key] = [
                at for at in Attempt.objects.filter(rate_key=key, handed_out_at__gt=since)
                .order_by("-handed_out_at").values_list("handed_out_at", flat=True)
                [:attempt.rate_limit or 1] if at is not None]
        return self._starts[key]

    def others_wait(self, attempt: Attempt) -> bool:
        """Others of one of its keys wait already (it must not pass them)."""
        return any(self._has_waiting(field, key) for field, key in _fields(attempt))

    def _has_waiting(self, field: str, key: str) -> bool:
        if f"{field}:{key}" not in self._waiting:
            self._waiting[f"{field}:{key}"] = Attempt.objects.filter(
                **{field: key}, status=AttemptStatus.WAITING).exists()
        return self._waiting[f"{field}:{key}"]

    def waits(self, attempt: Attempt) -> None:
        for field, key in _fields(attempt):
            self._waiting[f"{field}:{key}"] = True

    def fits(self, attempt: Attempt) -> tuple[bool, datetime | None]:
        """Whether it fits now; when it does not, when to look again: its rate's window
        lets it start then (None: a slot of its limit must free first)."""
        if attempt.limit_key and self.running(attempt.limit_key) >= (attempt.limit_max or 1):
            return False, None
        if attempt.rate_key:
            starts = self.starts(attempt)
            if len(starts) >= (attempt.rate_limit or 1):
                return False, starts[-1] + timedelta(seconds=attempt.rate_per or 0)
        return True, None

    def take(self, attempt: Attempt) -> None:
        if attempt.limit_key:
            self._running[attempt.limit_key] = self.running(attempt.limit_key) + 1
        if attempt.rate_key:
            starts = self.starts(attempt)
            starts.insert(0, self.now)
            del starts[attempt.rate_limit or 1:]


def _fields(attempt: Attempt) -> list[tuple[str, str]]:
    return [(field, key) for field, key in (("limit_key", attempt.limit_key),
                                            ("rate_key", attempt.rate_key)) if key]


def _keys(attempts: Iterable[Attempt]) -> set[str]:
    return {key for a in attempts for key in (a.limit_key, a.rate_key) if key}


def take_slots(attempts: Sequence[Attempt]) -> None:
    """New attempts of a command, before they are inserted: each limited one that fits is
    handed out now, the others wait (their status says which)."""
    limited = [a for a in attempts if a.status == AttemptStatus.QUEUED
               and (a.limit_key or a.rate_key)]
    if not limited:
        return
    lock_keys(_keys(limited))
    now = clock.now_datetime()
    tally = Tally(now)
    for attempt in limited:
        if tally.others_wait(attempt):
            attempt.status = AttemptStatus.WAITING
            continue
        fits, until = tally.fits(attempt)
        if fits:
            attempt.handed_out_at = now
            tally.take(attempt)
        else:
            attempt.status, attempt.look_again_at = AttemptStatus.WAITING, until
            tally.waits(attempt)


def waiting_in_order(keys: set[str], after: tuple[datetime, str] | None = None
                     ) -> tuple[list[Attempt], bool]:
    """The oldest waiting attempts of ``keys`` after ``after``, oldest first, up to where
    every key's page (``PAGE`` each) reaches; and whether more may follow."""
    found: dict[str, Attempt] = {}
    bound: tuple[datetime, str] | None = None  # the oldest last row of a full page
    for field in ("limit_key", "rate_key"):
        for key in keys:
            # A paused instance's wait on: its attempts start when it resumes (no new work
            # is handed out while paused), and let the others of the key pass meanwhile.
            rows = Attempt.objects.filter(**{field: key}, status=AttemptStatus.WAITING) \
                .exclude(instance__status="paused")
            if after is not None:
                rows = rows.filter(Q(enqueued_at__gt=after[0])
                                   | Q(enqueued_at=after[0], token__gt=after[1]))
            page = list(rows.order_by("enqueued_at", "token").only(
                "token", "limit_key", "limit_max", "rate_key", "rate_limit", "rate_per",
                "enqueued_at", "look_again_at")[:PAGE])
            found.update((a.token, a) for a in page)
            if len(page) == PAGE:
                last = (page[-1].enqueued_at, page[-1].token)
                bound = last if bound is None else min(bound, last)
    ordered = sorted(found.values(), key=lambda a: (a.enqueued_at, a.token))
    if bound is None:
        return ordered, False
    # Beyond the bound, a key whose page ended there may have older rows not read yet.
    return [a for a in ordered if (a.enqueued_at, a.token) <= bound], True


def hand_out_waiting(keys: Iterable[str]) -> list[str]:
    """Hand out the waiting attempts of ``keys`` that fit now, oldest first; their tokens.

    A transaction of its own (the runner gets them when it commits). The keys of the
    first page's attempts are locked with ``keys``, in key order; an attempt further on
    whose other key was not locked waits for the next release (the sweep's at the latest).
    """
    keys = set(keys) - {""}
    if not keys:
        return []
    handed: list[str] = []
    with transaction.atomic():
        locked = keys | _keys(waiting_in_order(keys)[0])
        lock_keys(locked)
        now = clock.now_datetime()
        tally = Tally(now)
        blocked: set[str] = set()  # keys whose oldest waiting attempt cannot go yet
        heads: dict[str, datetime | None] = {}
        page, more = waiting_in_order(keys)
        while page:
            for attempt in page:
                own = _keys([attempt])
                if own & blocked or not own <= locked:
                    if attempt.look_again_at is not None and attempt.look_again_at <= now:
                        heads[attempt.token] = None  # behind another: that one is looked at
                    blocked |= own
                    continue
                fits, until = tally.fits(attempt)
                if fits:
                    handed.append(attempt.token)
                    tally.take(attempt)
                else:
                    if until != attempt.look_again_at:
                        heads[attempt.token] = until
                    blocked |= own
            last = page[-1]
            page, more = ([], False) if keys <= blocked or not more else waiting_in_order(
                keys - blocked, after=(last.enqueued_at, last.token))
        if handed:
            Attempt.objects.filter(token__in=handed, status=AttemptStatus.WAITING).update(
                status=AttemptStatus.QUEUED, handed_out_at=now, enqueued_at=now,
                look_again_at=None)
        for token, until in heads.items():
            Attempt.objects.filter(token=token, status=AttemptStatus.WAITING).update(
                look_again_at=until)
        if handed:
            transaction.on_commit(lambda: hand_out(workflow_settings.RUNNER(), handed))
    return handed


def hand_out_resumed(instance_ids: Iterable[str]) -> list[str]:
    """Instances that were paused resumed: their waiting attempts may take a free slot."""
    keys = {key for pair in Attempt.objects.filter(
        instance_id__in=list(instance_ids), status=AttemptStatus.WAITING)
        .values_list("limit_key", "rate_key") for key in pair if key}
    return hand_out_waiting(keys) if keys else []


def give_slot_on(token: str) -> list[str]:
    """The limited attempt ``token`` ended: give its slot on."""
    key = Attempt.objects.filter(token=token).values_list("limit_key", flat=True).first()
    return hand_out_waiting([key]) if key else []


def hand_out_due(now: datetime, *, every_key: bool = False, each: Any = None) -> int:
    """Hand out the waiting work of the keys whose attempt's time to look again came
    (``every_key``: every key with waiting work, the sweep's whole look); how many went.
    ``each``: the sweep's ``Items`` that runs each key's hand-out as an item of its own."""
    waiting = Attempt.objects.filter(status=AttemptStatus.WAITING)
    if not every_key:
        waiting = waiting.filter(look_again_at__lte=now)
    keys = {key for pair in waiting.values_list("limit_key", "rate_key").distinct()[:BATCH]
            for key in pair if key}
    # Each key on its own: a hot key's lock does not hold up the others.
    if each is None:
        return sum(len(hand_out_waiting([key])) for key in sorted(keys))
    held = each.held_back()
    return sum(len(each.run(key, None, partial(hand_out_waiting, [key])) or ())
               for key in sorted(keys - held))


def next_look_at() -> datetime | None:
    return (Attempt.objects.filter(status=AttemptStatus.WAITING, look_again_at__isnull=False)
            .order_by("look_again_at").values_list("look_again_at", flat=True).first())


def waiting_for(attempt: Attempt) -> str:
    """What a waiting attempt waits for, as the admin and the API say it:
    ``waiting for a slot (tenant-7: 5 of 5 running)``."""
    if attempt.status != AttemptStatus.WAITING:
        return ""
    if attempt.limit_key:
        running = Attempt.objects.filter(limit_key=attempt.limit_key, status__in=ACTIVE).count()
        if running >= (attempt.limit_max or 1) or not attempt.rate_key:  # else: its rate
            return (f"waiting for a slot ({attempt.limit_key}: {running} of "
                    f"{attempt.limit_max} running)")
    since = clock.now_datetime() - timedelta(seconds=attempt.rate_per or 0)
    started = Attempt.objects.filter(rate_key=attempt.rate_key, handed_out_at__gt=since).count()
    return (f"waiting for a slot ({attempt.rate_key}: {started} of {attempt.rate_limit} "
            f"started in {attempt.rate_per:g} s)")
