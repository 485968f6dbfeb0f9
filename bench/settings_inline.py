"""Settings for ``bench/durable_peers.py``'s inline runs: bench/settings.py (PostgreSQL,
persistent connections, the immediate runner: the work runs in the caller's thread) and
``bench.opsapp``'s workflows (``bench-noop``, ``bench-durable``)."""

from bench.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "bench.opsapp"]  # noqa: F405
