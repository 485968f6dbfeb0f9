"""A runner for the admin's browser tests: workers that never come."""

from __future__ import annotations

from collections.abc import Iterable


class HoldingRunner:
    """Work handed out stays queued: an instance at work that nothing moves on."""

    def enqueue(self, tokens: Iterable[str]) -> None:
        pass
