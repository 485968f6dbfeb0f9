from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from ...runners.sweeper_thread import Sweeper
from ...services import sweep


class Command(BaseCommand):
    help = ("Fire due workflow deadlines, interrupt attempts whose worker stopped sending "
            "heartbeats, and hand out again attempts no worker claimed. django-q2's workers "
            "do this by themselves; run it where no qcluster runs. Safe to run anywhere, any "
            "number of times at once.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--loop", action="store_true",
                            help="Keep sweeping until stopped: deadlines as they fall due, the "
                                 "rest every SWEEP_INTERVAL seconds (one such loop sweeps at a "
                                 "time; the others stand by).")
        parser.add_argument("--interval", type=float, default=None,
                            help="With --loop, seconds between looks for silent workers and "
                                 "lost attempts.")
        parser.add_argument("--for", dest="duration", type=float, default=None,
                            help="With --loop, stop after this many seconds.")

    def handle(self, *args: Any, loop: bool, interval: float | None, duration: float | None,
               **options: Any) -> None:
        if loop:
            Sweeper(interval=interval).run(duration)
            return
        report = sweep()
        if options["verbosity"] >= 1:
            self.stdout.write(str(report))
