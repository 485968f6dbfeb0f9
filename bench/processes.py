"""The CPU time of the processes a benchmark started, read from ``/proc``."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path


def group_cpu(groups: set[int]) -> float:
    """CPU seconds (user and system) so far of the processes in the process groups
    ``groups``, with the children they reaped."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) in groups:
                total += sum(int(field) for field in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")
