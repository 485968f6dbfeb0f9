"""Django settings for ``bench/operations.py``: PostgreSQL, django-q2, persistent connections.

The script sets ``DWF_BENCH_DB`` (a database of its own), ``DWF_BENCH_BROKER``
(``orm`` or ``redis``), ``DWF_BENCH_QUEUE`` (a queue of its own) and
``DWF_BENCH_WORKERS`` for the ``qcluster`` it starts.
"""

from __future__ import annotations

import importlib.util
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
    **({"broker_class": "django_workflows.runners.django_q.listen_broker.ListenORM"}
       if os.environ.get("DWF_BENCH_BROKER") == "orm-listen" else {}),
}

DJANGO_WORKFLOWS = {"RUNNER": "django_workflows.runners.django_q.Runner",
                    # bench/deadlines.py measures an idle cluster without them too
                    "SWEEP_IN_WORKERS": os.environ.get("DWF_BENCH_SWEEP", "1") == "1",
                    # DWF_BENCH_PREPARED=0: every statement sent as it is (a process that
                    # lives for one Task, as RQ's work horse, uses each statement once)
                    "PREPARED_STATEMENTS": os.environ.get("DWF_BENCH_PREPARED", "1") == "1"}

# The Tasks runner (bench/tasks_runner.py, --brokers tasks-db,tasks-rq): Django's Tasks
# framework with the database backend ("default": `db_worker`) and RQ ("rq": `rqworker`),
# on a queue of the run's own (DWF_BENCH_QUEUE). DWF_BENCH_RUNNER makes the workers' runner
# the Tasks one.
if importlib.util.find_spec("django_tasks_db") is not None:
    import django

    if django.VERSION < (6, 0):
        INSTALLED_APPS.append("django_tasks")
    INSTALLED_APPS += ["django_tasks_db", "django_rq", "django_tasks_rq"]
    _queue = os.environ.get("DWF_BENCH_QUEUE", "dwf-bench")[:32]
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": [_queue]},
             "rq": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": [_queue]}}
    RQ_QUEUES = {_queue: {"HOST": REDIS["host"], "PORT": REDIS["port"], "DB": REDIS["db"],
                          "DEFAULT_TIMEOUT": 300}}
    RQ = {"JOB_CLASS": "django_tasks_rq.Job"}
    DJANGO_WORKFLOWS["TASKS_QUEUE"] = _queue
    DJANGO_WORKFLOWS["TASKS_BACKEND"] = os.environ.get("DWF_BENCH_TASKS_BACKEND", "default")
    if os.environ.get("DWF_BENCH_RUNNER"):
        DJANGO_WORKFLOWS["RUNNER"] = os.environ["DWF_BENCH_RUNNER"]

# DWF_BENCH_OBSERVE=on|memory (bench/operations.py --observed): the workers with metrics and
# traces on (docs/observability.md), without an exporter or with the in-memory one.
_observe = os.environ.get("DWF_BENCH_OBSERVE", "off")
if _observe != "off":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    DJANGO_WORKFLOWS.update(METRICS=True, TRACING=True)
    _provider = TracerProvider()
    if _observe == "memory":
        _provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(_provider)
