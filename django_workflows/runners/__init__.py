"""Runners carry out background work. They receive attempt tokens, never objects.

The setting ``RUNNER`` names the one in use (a dotted path), and the services hand it
the tokens of new work after each commit. What runs in a worker is the same for
every runner: ``worker.py`` claims an attempt, runs it and reports how it ended, and
``sweeper.py`` fires what falls due. Each runner puts those in its workers:

- ``django_q/``: django-q2's workers (``manage.py qcluster``);
- ``immediate.py``: in this process, at once (tests, tiny sites).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..conf import workflow_settings


class Runner(Protocol):
    def enqueue(self, tokens: Sequence[str]) -> None:
        """Run each attempt named by a token, now or on a worker (after commit)."""


def get_runner() -> Runner:
    """The runner the ``RUNNER`` setting names."""
    runner: Runner = workflow_settings.RUNNER()
    return runner
