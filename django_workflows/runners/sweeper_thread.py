"""The sweeper: a thread in every worker process, one of them sweeping at a time.

A runner's workers start one each (django-q2's, when a worker spawns:
``runners/django_q``), so a site that runs its workers gets its deadlines fired
with no step to forget. The threads take turns through the sweep's lease: the holder fires deadlines
and schedules as they fall due, sleeping until the next one (at most ``POLL`` seconds, so
that a deadline made meanwhile is not missed) and does the rest of the sweep
(silent workers, lost attempts) every ``SWEEP_INTERVAL``; the others try to
take over every ``STANDBY`` seconds. A sleeping thread holds no worker: the
worker's own thread goes on taking tasks.

``manage.py workflows_sweep --loop`` runs the same loop in the foreground,
for a site without django-q2.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from django.db import close_old_connections, connection

from .. import clock
from ..conf import workflow_settings
from ..services.sweep import hold_lease, next_deadline_at, release_lease, sweep_turn

logger = logging.getLogger("django_workflows")

POLL = 0.5  # a deadline made while the sweeper sleeps fires at most this late
LEASE_TTL = 5.0  # a holder that died without a word is taken over after this long
RENEW_EVERY = 2.0  # the holder renews (and records a sweep) this often
STANDBY = 1.0  # the others try to take the lease this often


class Sweeper:
    def __init__(self, *, interval: float | None = None, holder: str | None = None) -> None:
        self.interval = float(interval or workflow_settings.SWEEP_INTERVAL)
        self.holder = holder or (f"{socket.gethostname()}:{os.getpid()}:"
                                 f"{uuid.uuid4().hex[:8]}")
        self.stopped = threading.Event()
        self.leading = False
        self._renew_at = self._whole_at = 0.0  # time.monotonic()
        self._thread: threading.Thread | None = None

    def run(self, duration: float | None = None) -> None:
        """Sweep until :meth:`stop` (or for ``duration`` seconds); a failing database only
        pauses it."""
        end = time.monotonic() + duration if duration is not None else None
        try:
            while not self.stopped.is_set():
                try:
                    wait = self.turn()
                except Exception:
                    # A restarted database must not end the loop: the next turn (on a new
                    # connection) does what this one could not.
                    logger.exception("The sweep failed; trying again in %gs", STANDBY)
                    self.leading = False
                    connection.close()
                    wait = STANDBY
                if end is not None:
                    if time.monotonic() >= end:
                        return
                    wait = min(wait, end - time.monotonic())
                self.stopped.wait(max(wait, 0.0))
        finally:
            self.release()
            connection.close()

    def turn(self) -> float:
        """Hold the lease and sweep what is due; the seconds until the next turn."""
        close_old_connections()
        mono, now = time.monotonic(), clock.now_datetime()
        if not self.leading or mono >= self._renew_at:
            self.leading = hold_lease(self.holder, now, LEASE_TTL)
            if not self.leading:
                return STANDBY
            self._renew_at = mono + RENEW_EVERY
        whole = mono >= self._whole_at
        report = sweep_turn(now, whole=whole)
        if whole:
            self._whole_at = mono + self.interval
        if report:
            logger.info("Sweep: %s", report)
        wait = min(self._renew_at, self._whole_at, mono + POLL) - time.monotonic()
        next_due = next_deadline_at()
        if next_due is not None:
            wait = min(wait, (next_due - clock.now_datetime()).total_seconds())
        return wait

    def start(self) -> None:
        """Run in a daemon thread of this process."""
        self._thread = threading.Thread(target=self.run, name="django-workflows sweeper",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop, and wait a little for the thread to hand the lease on."""
        self.stopped.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def release(self) -> None:
        if self.leading:
            self.leading = False
            try:
                release_lease(self.holder)
            except Exception:  # the lease then runs out by itself
                logger.exception("Could not release the sweep's lease")
