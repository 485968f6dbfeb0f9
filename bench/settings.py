"""Settings for ``bench/transitions.py``: PostgreSQL or MariaDB/MySQL, persistent connections.

The server comes from ``DWF_BENCH_URL`` (a ``DATABASE_URL``; by default
PostgreSQL at 127.0.0.1 as user postgres, or from ``DWF_BENCH_HOST``, ``_PORT``,
``_USER``, ``_PASSWORD``), the database name from ``DWF_BENCH_DB``:
``bench/transitions.py`` creates a database of its own for each run and drops it
at the end.
"""

from __future__ import annotations

import os

import dj_database_url

SECRET_KEY = "django-workflows-bench-not-secret"
DEBUG = False  # no query log
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_workflows",
]

if os.environ.get("DWF_BENCH_URL"):
    _database = dj_database_url.parse(os.environ["DWF_BENCH_URL"])
else:
    _database = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("DWF_BENCH_HOST", "127.0.0.1"),
        "PORT": os.environ.get("DWF_BENCH_PORT", "5432"),
        "USER": os.environ.get("DWF_BENCH_USER", "postgres"),
        "PASSWORD": os.environ.get("DWF_BENCH_PASSWORD", ""),
    }
_database["NAME"] = os.environ.get("DWF_BENCH_DB", "test")
_database["CONN_MAX_AGE"] = None  # persistent, as in web processes and workers
if _database["ENGINE"] == "django.db.backends.mysql":
    # As docs/scaling.md advises for MariaDB/MySQL.
    _database["OPTIONS"] = {"isolation_level": "read committed", "charset": "utf8mb4",
                            **_database.get("OPTIONS", {})}
DATABASES = {"default": _database}

DJANGO_WORKFLOWS = {"RUNNER": "django_workflows.runners.immediate.Runner"}
