"""Django settings for ``bench/tasks.py``: two PostgreSQL databases, a small and a large one.

``default`` (``DWF_BENCH_DB``) and ``large`` (``DWF_BENCH_DB_LARGE``); the script
creates both and drops them at the end.
"""

from __future__ import annotations

import os

from bench.settings import *  # noqa: F403 - the benchmarks' common settings

DATABASES = {
    alias: {**DATABASES["default"], "NAME": os.environ[variable]}  # noqa: F405
    for alias, variable in (("default", "DWF_BENCH_DB"), ("large", "DWF_BENCH_DB_LARGE"))
}
