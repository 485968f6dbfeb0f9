"""Running one attempt in a worker, whatever the runner: claim it, run the user code,
report how it ended.

While the code runs, a heartbeat (with the progress and the newest log lines)
is written to the attempt's own row, never to the instance's, at most once
per ``PROGRESS_INTERVAL``; the same write reads whether the work was told to
stop.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from functools import partial

from django.db import close_old_connections

from .. import engine
from ..conf import workflow_settings
from ..engine.bounds import MAX_LOGS
from ..observability import observers
from ..services import reports
from ..services.attempts import Claimed, beat, claim_attempt, finish_claimed
from ..services.journal import DatabaseJournal

logger = logging.getLogger("django_workflows")

WORKER_NAME = f"{socket.gethostname()}:{os.getpid()}"


class DatabaseSink:
    """An :class:`~django_workflows.engine.AttemptSink` backed by the attempt's row."""

    def __init__(self, token: str, *, threaded: bool) -> None:
        self.token = token
        self.threaded = threaded
        self.interval = float(workflow_settings.PROGRESS_INTERVAL)
        self.heartbeat_every = float(workflow_settings.HEARTBEAT_INTERVAL)
        # The thread wakes for whichever comes first: a progress write or a heartbeat.
        self.tick = min(self.interval, self.heartbeat_every)
        self._lock = threading.Lock()
        self._status: str | None = None
        self._progress: engine.Progress | None = None
        self._logs: list[str] = []
        self._dirty = False
        self._reason: str | None = None
        self._last_write = time.monotonic()
        self._last_check = 0.0

    # -- the AttemptSink protocol ------------------------------------------

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def stop_reason(self) -> str | None:
        if not self.threaded and time.monotonic() - self._last_check >= self.tick:
            self._write(force=False)
        return self._reason

    def report(self, *, status: str | None, progress: engine.Progress | None,
               logs: list[str]) -> None:
        with self._lock:
            if status:
                self._status = status
            if progress is not None:
                self._progress = progress
            if logs:
                self._logs = (self._logs + logs)[-MAX_LOGS:]
            self._dirty = True
        if not self.threaded:
            self._write(force=False)

    # -- writing -------------------------------------------------------------

    @property
    def due_at(self) -> float:
        """When (``time.monotonic()``) the next write or look at the stop flag is due."""
        return max(self._last_write, self._last_check) + self.tick

    def _write(self, *, force: bool) -> None:
        """One UPDATE (heartbeat, progress, logs) or one SELECT of the stop flag."""
        now = time.monotonic()
        if not force and now < self.due_at:
            return
        with self._lock:
            dirty, self._dirty = self._dirty, False
            status, progress, logs = self._status or "running", self._progress, list(self._logs)
        write = dirty or force or now - self._last_write >= self.heartbeat_every
        self._reason = beat(self.token, live_status=status, progress=progress, logs=logs,
                            write=write)
        if write:
            self._last_write = now
        self._last_check = now

    def start(self) -> None:
        if self.threaded:
            heartbeats.add(self)

    def close(self, *, flush: bool = True) -> None:
        """Stop the heartbeat; with ``flush``, write what was reported since the last write."""
        if self.threaded:
            heartbeats.remove(self)
        if flush:
            self._write(force=True)


class Heartbeats:
    """One thread per worker process beats for the attempts it runs.

    Started on first use (in the worker, after django-q2 forked it) and kept:
    a thread started and joined for every attempt cost a no-op operation more
    than the operation itself. It wakes when the first sink is due
    (:meth:`DatabaseSink._write` says whether anything is) and at least every
    ``IDLE`` seconds; an attempt that ends before its first turn costs it
    nothing, not even a wake-up. Once it has no attempt left, its database
    connection is closed or kept as ``CONN_MAX_AGE`` says.
    """

    IDLE = 1.0

    def __init__(self) -> None:
        self._reset()
        # A thread does not survive a fork, and a lock it held would stay held.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._sinks: set[DatabaseSink] = set()
        self._changed = threading.Condition()
        self._writing = threading.Lock()  # held while the thread writes a sink's beat
        self._wake_at = 0.0  # time.monotonic() the thread sleeps until
        self._used_database = False  # since it last had no attempt
        self._thread: threading.Thread | None = None

    def add(self, sink: DatabaseSink) -> None:
        with self._changed:
            self._sinks.add(sink)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="django-workflows-heartbeat")
                self._thread.start()
            elif sink.due_at < self._wake_at:
                self._changed.notify()

    def remove(self, sink: DatabaseSink) -> None:
        """Take ``sink`` out; a beat of it under way is over when this returns, and so is
        the thread's use of its connection if no attempt is left."""
        with self._changed:
            self._sinks.discard(sink)
            if not self._sinks and self._used_database:
                self._changed.notify()
                self._changed.wait_for(lambda: self._sinks or not self._used_database,
                                       timeout=10)
        with self._writing:
            pass

    def _run(self) -> None:
        while True:
            with self._changed:
                if not self._sinks and self._used_database:
                    close_old_connections()
                    self._used_database = False
                    self._changed.notify_all()
                now = time.monotonic()
                self._wake_at = min((sink.due_at for sink in self._sinks),
                                    default=now + self.IDLE)
                if self._wake_at > now:
                    self._changed.wait(self._wake_at - now)
                due = [sink for sink in self._sinks if sink.due_at <= time.monotonic()]
                self._used_database |= bool(due)
            for sink in due:
                with self._writing:
                    if sink not in self._sinks:  # its attempt ended meanwhile
                        continue
                    try:
                        sink._write(force=False)
                    except Exception:  # a lost connection must not end the heartbeats
                        logger.exception("Heartbeat of attempt %s failed", sink.token)
                        close_old_connections()


heartbeats = Heartbeats()


def run_attempt(token: str, *, heartbeat_thread: bool = True) -> bool:
    """Run the attempt ``token`` names; False when it was stale or already taken.

    ``heartbeat_thread``: the worker process's heartbeat thread beats while the
    code runs (a worker); without it, the attempt beats when it reports (in-process).
    """
    claimed = claim_attempt(token, worker=WORKER_NAME)
    if claimed is None:
        return False
    if reports.watched():
        observers.attempt_run(claimed, partial(_run_claimed, claimed, heartbeat_thread))
    else:
        _run_claimed(claimed, heartbeat_thread)
    return True


def _run_claimed(claimed: Claimed, heartbeat_thread: bool) -> tuple[engine.AttemptOutcome, bool]:
    """Run a claimed attempt and report it: its outcome, and whether it was recorded."""
    sink = DatabaseSink(claimed.work.token, threaded=heartbeat_thread)
    sink.start()
    try:
        work = claimed.work
        journal = DatabaseJournal(work.snapshot.id, work.operation.id, work.token) \
            if work.operation is not None else None
        outcome = engine.execute(work, sink, flush_interval=sink.interval, journal=journal)
        # The heartbeat goes on until the result is recorded, so a finish that waits for
        # the instance's lock is not taken for a dead worker; the finish writes the last
        # progress and log lines itself.
        return outcome, finish_claimed(claimed, outcome)
    finally:
        sink.close(flush=False)
