"""Django settings for the benchmarks in ``bench/`` (PostgreSQL, persistent connections).

The database name comes from ``DWF_BENCH_DB``: ``bench/transitions.py`` creates
a database of its own for each run and drops it at the end.
"""

from __future__ import annotations

import os

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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("DWF_BENCH_DB", "test"),
        "HOST": os.environ.get("DWF_BENCH_HOST", "127.0.0.1"),
        "PORT": os.environ.get("DWF_BENCH_PORT", "5432"),
        "USER": os.environ.get("DWF_BENCH_USER", "postgres"),
        "PASSWORD": os.environ.get("DWF_BENCH_PASSWORD", ""),
        "CONN_MAX_AGE": None,  # persistent, as in web processes and workers
    }
}

DJANGO_WORKFLOWS = {"RUNNER": "django_workflows.runners.immediate.Runner"}
