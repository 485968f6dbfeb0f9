from __future__ import annotations

import logging
import time
from typing import Any

from django.core.management.base import BaseCommand
from django.db import connections

from ...conf import workflow_settings
from ...services import sweep

logger = logging.getLogger("django_workflows")


class Command(BaseCommand):
    help = ("Fire due workflow deadlines, interrupt attempts whose worker stopped sending "
            "heartbeats, and hand out again attempts no worker claimed. Safe to run anywhere, "
            "any number of times at once.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--loop", action="store_true",
                            help="Keep sweeping (every SWEEP_INTERVAL seconds) until stopped.")
        parser.add_argument("--interval", type=float, default=None,
                            help="Seconds between sweeps with --loop.")
        parser.add_argument("--for", dest="duration", type=float, default=None,
                            help="With --loop, stop after this many seconds.")

    def handle(self, *args: Any, loop: bool, interval: float | None, duration: float | None,
               **options: Any) -> None:
        interval = interval or float(workflow_settings.SWEEP_INTERVAL)
        end = time.monotonic() + duration if duration else None
        while True:
            try:
                report = sweep()
            except Exception:
                if not loop:
                    raise
                # A restarted database or broker must not end the loop: the next sweep
                # (on a new connection) does what this one could not.
                logger.exception("The sweep failed; trying again in %gs", interval)
                connections.close_all()
            else:
                if options["verbosity"] >= 1 and (not loop or report.fired or report.interrupted
                                                  or report.redispatched):
                    self.stdout.write(str(report))
            if not loop or (end is not None and time.monotonic() + interval > end):
                return
            time.sleep(interval)
