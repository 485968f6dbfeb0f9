"""Settings for ``bench/durable_peers.py``'s inline runs: bench/settings.py (PostgreSQL,
persistent connections, the immediate runner: the work runs in the caller's thread) and
``bench.opsapp``'s workflows (``bench-noop``, ``bench-durable``). ``DWF_BENCH_NO_FLUSH_WAIT=1``:
commits do not wait for their WAL flush (``synchronous_commit=off``): not durable, only the
bound of what fewer flushes could give (``bench/durable_peers.py --bound``)."""

import os

from bench.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "bench.opsapp"]  # noqa: F405

if os.environ.get("DWF_BENCH_NO_FLUSH_WAIT") == "1":
    DATABASES["default"]["OPTIONS"] = {"options": "-c synchronous_commit=off"}  # noqa: F405
