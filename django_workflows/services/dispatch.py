"""Work handed to the runner once its command committed (``RUNNER``, a dotted path)."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("django_workflows")


def hand_out(runner: Any, tokens: list[str]) -> None:
    """Give work to the runner; if it fails, the command stays committed all the same.

    Work the runner did not take stays queued, and the sweep hands it out again.
    """
    try:
        runner.enqueue(tokens)
    except Exception:
        logger.exception("The runner did not take attempts %s; the sweep will hand them "
                         "out again", ", ".join(tokens))
