"""Runs background work at once, in this process: for tests and tiny sites.

Work that leads to more work is queued and run in a loop, not recursively.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence

from .worker import run_attempt

_local = threading.local()


class Runner:
    def enqueue(self, tokens: Sequence[str]) -> None:
        queue: deque[str] = _local.__dict__.setdefault("queue", deque())
        queue.extend(tokens)
        if getattr(_local, "running", False):
            return
        _local.running = True
        try:
            while queue:
                run_attempt(queue.popleft(), heartbeat_thread=False)
        finally:
            _local.running = False
