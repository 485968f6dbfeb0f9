"""Runners carry out background work. They receive attempt tokens, never objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..conf import workflow_settings


class Runner(Protocol):
    def enqueue(self, tokens: Sequence[str]) -> None:
        """Run each attempt named by a token, now or on a worker (after commit)."""


def get_runner() -> Runner:
    return workflow_settings.RUNNER()
