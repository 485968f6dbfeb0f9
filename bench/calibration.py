"""How fast this machine runs Python today: a fixed piece of work, timed in CPU.

The benchmarks print it beside their tables. A ratio to a baseline measured in the same run
already cancels most of a slow day; the calibration says what kind of day it was, so two
tables from different days compare: a regression moves our figures and not the
calibration, a slow machine moves both.
"""

from __future__ import annotations

import json
import time

# About the size of the state and snapshot a no-op operation's instance writes.
_DOCUMENT = {"order": {"number": "O-1001", "items": [{"sku": f"SKU-{n}", "quantity": n,
                                                       "price": n * 1.25} for n in range(12)],
                       "customer": {"name": "Ada Lovelace", "email": "ada@example.com"}},
             "history": ["cart", "payment", "preparation"], "errors": [], "revision": 7}


def _work() -> int:
    total = 0
    for _ in range(2000):
        text = json.dumps(_DOCUMENT)
        total += len(json.loads(text)["order"]["items"])
    return total


def calibration() -> float:
    """The CPU milliseconds of the fixed work, best of five."""
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        _work()
        best = min(best, time.process_time() - started)
    return best * 1000


def calibration_line() -> str:
    return (f"calibration: {calibration():.1f} ms of CPU for 2,000 JSON round trips of a "
            "1 KB document (best of 5; lower is a faster machine)")
