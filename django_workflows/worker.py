"""Running one attempt in a worker: claim it, run the user code, report how it ended.

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
from typing import Any

from django.db import close_old_connections, connection

from . import engine
from .conf import workflow_settings
from .engine.limits import MAX_LOGS
from .services.attempts import beat, claim_attempt, finish_attempt

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
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

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

    def _write(self, *, force: bool) -> None:
        """One UPDATE (heartbeat, progress, logs) or one SELECT of the stop flag."""
        now = time.monotonic()
        if not force and now - max(self._last_write, self._last_check) < self.tick:
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

    def _beat(self) -> None:
        try:
            while not self._done.wait(self.tick):
                try:
                    self._write(force=False)
                except Exception:  # a lost connection must not kill the heartbeat
                    logger.exception("Heartbeat of attempt %s failed", self.token)
                    close_old_connections()
        finally:
            connection.close()

    def start(self) -> None:
        if self.threaded:
            self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{self.token}",
                                            daemon=True)
            self._thread.start()

    def close(self, *, flush: bool = True) -> None:
        """Stop the heartbeat; with ``flush``, write what was reported since the last write."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if flush:
            self._write(force=True)


def run_attempt(token: str, *, heartbeat_thread: bool = True,
                instance_id: Any = None) -> bool:
    """Run the attempt ``token`` names; False when it was stale or already taken.

    ``instance_id`` (the runner passes it) is no longer needed: the claim reads
    the attempt's row anyway.
    """
    claimed = claim_attempt(token, worker=WORKER_NAME)
    if claimed is None:
        return False
    sink = DatabaseSink(token, threaded=heartbeat_thread)
    sink.start()
    try:
        outcome = engine.execute(claimed.work, sink, flush_interval=sink.interval)
        # The heartbeat goes on until the result is recorded, so a finish that waits for
        # the instance's lock is not taken for a dead worker; the finish writes the last
        # progress and log lines itself.
        finish_attempt(token, outcome, instance_id=claimed.work.snapshot.id,
                       claimed_at=claimed.at)
    finally:
        sink.close(flush=False)
    return True
