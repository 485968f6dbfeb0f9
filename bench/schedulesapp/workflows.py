"""``bench-scheduled``: one manual step; ``DWF_BENCH_SCHEDULES`` schedules start it every
``DWF_BENCH_EVERY`` seconds (all due at the same moments: they are counted from the epoch)."""

from __future__ import annotations

import os

from django_workflows import Schedule, Step, Workflow

scheduled = Workflow(id="bench-scheduled", steps=[Step("review")])

SCHEDULES = [Schedule(f"bench-{n}", workflow=scheduled,
                      every=int(os.environ.get("DWF_BENCH_EVERY", "2")))
             for n in range(int(os.environ.get("DWF_BENCH_SCHEDULES", "0")))]
