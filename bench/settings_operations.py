"""Django settings for ``bench/operations.py``: PostgreSQL, django-q2, persistent connections.

The script sets ``DWF_BENCH_DB`` (a database of its own), ``DWF_BENCH_BROKER``
(``orm`` or ``redis``), ``DWF_BENCH_QUEUE`` (a queue of its own) and
``DWF_BENCH_WORKERS`` for the ``qcluster`` it starts.
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
    "django_q",
    "bench.opsapp",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("DWF_BENCH_DB", "test"),
        "HOST": os.environ.get("DWF_BENCH_HOST", "127.0.0.1"),
        "PORT": os.environ.get("DWF_BENCH_PORT", "5432"),
        "USER": os.environ.get("DWF_BENCH_USER", "postgres"),
        "PASSWORD": os.environ.get("DWF_BENCH_PASSWORD", ""),
        "CONN_MAX_AGE": None,  # persistent: DESIGN.md section 6
    }
}

REDIS = {"host": os.environ.get("DWF_BENCH_REDIS_HOST", "127.0.0.1"), "port": 6379,
         "db": int(os.environ.get("DWF_BENCH_REDIS_DB", "6"))}

Q_CLUSTER = {
    "name": "dwf-bench",
    "cluster_name": os.environ.get("DWF_BENCH_QUEUE", "dwf-bench"),
    "workers": int(os.environ.get("DWF_BENCH_WORKERS", "2")),
    "timeout": 60,
    "retry": 120,
    "max_attempts": 1,
    # orm-listen is woken by NOTIFY: its poll only bounds a lost notification
    "poll": 1.0 if os.environ.get("DWF_BENCH_BROKER") == "orm-listen" else 0.05,
    "save_limit": 0,  # keep every success row: the benchmark counts them
    "ack_failures": True,
    "catch_up": False,
    "scheduler": False,
    "log_level": "WARNING",  # no log line per task
    **({"redis": REDIS} if os.environ.get("DWF_BENCH_BROKER") == "redis" else {"orm": "default"}),
    **({"broker_class": "django_workflows.runners.listen_broker.ListenORM"}
       if os.environ.get("DWF_BENCH_BROKER") == "orm-listen" else {}),
}

DJANGO_WORKFLOWS = {"RUNNER": "django_workflows.runners.django_q.Runner",
                    # bench/deadlines.py measures an idle cluster without them too
                    "SWEEP_IN_WORKERS": os.environ.get("DWF_BENCH_SWEEP", "1") == "1"}
