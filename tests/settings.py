"""Settings for the test suite.

The database comes from ``DATABASE_URL`` (for example
``postgres://postgres@127.0.0.1:5432/test``, or ``mysql://root@127.0.0.1:3306/test``
for MariaDB/MySQL); without it, a SQLite file in a temporary directory. The test
database is a real file, never ``:memory:``, so that threads (and child processes)
share it.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import dj_database_url
import django

SECRET_KEY = "django-workflows-tests-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_workflows",  # before the admin: its index page then shows the task inbox
    "django.contrib.admin",
    "django.contrib.staticfiles",
    "tests.testapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "tests.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

STATIC_URL = "/static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django 6.1 configures email through MAILERS; without it, sending mail warns that it must be.
# (The test runner replaces every mailer with the in-memory one.)
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Serialise concurrent writers on SQLite: WAL, BEGIN IMMEDIATE, a busy timeout.
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}


def _sqlite_directory() -> Path:
    """One temporary directory per test run, inherited by child processes."""
    existing = os.environ.get("DWF_TEST_DB_DIR")
    if existing:
        return Path(existing)
    created = tempfile.mkdtemp(prefix="django-workflows-tests-")
    os.environ["DWF_TEST_DB_DIR"] = created
    atexit.register(shutil.rmtree, created, ignore_errors=True)
    return Path(created)


if os.environ.get("DATABASE_URL"):
    # CONN_MAX_AGE 0: tests open and close connections (threads, live servers).
    # DWF_TEST_CONN_MAX_AGE: a worker child that keeps its connection between Tasks.
    DATABASES = {"default": dj_database_url.parse(
        os.environ["DATABASE_URL"], conn_max_age=int(os.environ.get("DWF_TEST_CONN_MAX_AGE", 0)))}
    if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        # One test database per run (inherited by child processes), so that two runs on one
        # server do not drop each other's database.
        _run = os.environ.setdefault("DWF_TEST_RUN_ID", str(os.getpid()))
        DATABASES["default"].setdefault("TEST", {})
        DATABASES["default"]["TEST"].setdefault(
            "NAME", f"test_{DATABASES['default']['NAME']}_{_run}"
        )
else:
    _directory = _sqlite_directory()
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(_directory / "db.sqlite3"),
            "TEST": {"NAME": str(_directory / "test.sqlite3")},
        }
    }

# MariaDB/MySQL as Django's notes advise: READ COMMITTED (Django's default, stated) and
# 4-byte UTF-8 for the connection and the test database; options in the URL win.
MYSQL_OPTIONS = {"isolation_level": "read committed", "charset": "utf8mb4"}
if DATABASES["default"]["ENGINE"] == "django.db.backends.mysql":
    DATABASES["default"]["OPTIONS"] = {**MYSQL_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
    DATABASES["default"]["TEST"].setdefault("CHARSET", "utf8mb4")
    DATABASES["default"]["TEST"].setdefault("COLLATION", "utf8mb4_unicode_ci")

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {**SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
    DATABASES["default"].setdefault("TEST", {})
    if DATABASES["default"]["TEST"].get("NAME") in (None, "", ":memory:"):
        DATABASES["default"]["TEST"]["NAME"] = str(_sqlite_directory() / "test.sqlite3")

# django-q2, when installed: its tables exist in the test database so a real
# `qcluster` subprocess (tests/qcluster.py) can share it. Tests run background
# work in-process unless they start a cluster and choose the django-q2 runner.
if importlib.util.find_spec("django_q") is not None:
    INSTALLED_APPS.append("django_q")
    _broker = os.environ.get("DWF_Q_BROKER", "orm")
    Q_CLUSTER = {
        "name": os.environ.get("DWF_Q_NAME", "dwf-tests"),
        # The queue (list key); tests/qcluster.py gives each test run its own.
        "cluster_name": os.environ.get("DWF_Q_QUEUE") or os.environ.get("DWF_Q_NAME", "dwf-tests"),
        "workers": int(os.environ.get("DWF_Q_WORKERS", "2")),
        "timeout": 60,
        "retry": 120,
        "max_attempts": 1,
        "poll": float(os.environ.get("DWF_Q_POLL", "0.05")),
        "catch_up": False,
        "ack_failures": True,
        "scheduler": False,
        **({"redis": {"host": "127.0.0.1", "port": 6379,
                      "db": int(os.environ.get("DWF_REDIS_DB", "5"))}}
           if _broker == "redis" else {"orm": "default"}),
        # orm-listen: the ORM broker woken by NOTIFY (runners/django_q/listen_broker.py)
        **({"broker_class": "django_workflows.runners.django_q.listen_broker.ListenORM"}
           if _broker == "orm-listen" else {}),
    }

# Django's Tasks framework with the database backend ("default") and RQ ("rq"), when the
# tasks extra is installed: the Tasks runner's tests start `db_worker` and `rqworker`
# (tests/tasks_workers.py). One queue per test run (inherited by the children): Redis is
# shared by every run on the machine.
TASKS_INSTALLED = importlib.util.find_spec("django_tasks_db") is not None
if TASKS_INSTALLED:
    if django.VERSION < (6, 0):
        INSTALLED_APPS.append("django_tasks")  # the backport of django.tasks
    INSTALLED_APPS += ["django_tasks_db", "django_rq", "django_tasks_rq"]
    _tasks_queue = os.environ.setdefault("DWF_TASKS_QUEUE", f"dwf-tasks-{os.getpid()}")
    TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": [_tasks_queue]},
        "rq": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": [_tasks_queue]},
    }
    RQ_QUEUES = {_tasks_queue: {"HOST": "127.0.0.1", "PORT": 6379,
                                "DB": int(os.environ.get("DWF_RQ_DB", "9")),
                                "DEFAULT_TIMEOUT": 300}}
    RQ = {"JOB_CLASS": "django_tasks_rq.Job"}

# The REST API, when the [api] extra is installed (tests/urls.py mounts it at /api/).
if importlib.util.find_spec("rest_framework") is not None:
    INSTALLED_APPS += ["rest_framework", "django_filters", "drf_spectacular"]
    REST_FRAMEWORK = {
        "DEFAULT_AUTHENTICATION_CLASSES": [
            "rest_framework.authentication.BasicAuthentication",
            "rest_framework.authentication.SessionAuthentication",
        ],
        "EXCEPTION_HANDLER": "django_workflows.api.errors.exception_handler",
        "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
        "TEST_REQUEST_DEFAULT_FORMAT": "json",
    }
    SPECTACULAR_SETTINGS = {
        "TITLE": "django-workflows",
        "VERSION": "1",
        "COMPONENT_SPLIT_REQUEST": True,
    }

DJANGO_WORKFLOWS = {
    "RUNNER": os.environ.get("DWF_RUNNER", "django_workflows.runners.immediate.Runner"),
    "HEARTBEAT_INTERVAL": float(os.environ.get("DWF_HEARTBEAT_INTERVAL", "5")),
    "HEARTBEAT_TIMEOUT": float(os.environ.get("DWF_HEARTBEAT_TIMEOUT", "60")),
    "SWEEP_INTERVAL": float(os.environ.get("DWF_SWEEP_INTERVAL", "5")),
    "REDISPATCH_AFTER": float(os.environ.get("DWF_REDISPATCH_AFTER", "120")),
    "SWEEP_IN_WORKERS": os.environ.get("DWF_SWEEP_IN_WORKERS", "1") == "1",
    # The Tasks runner (when a test or a child chooses it): this run's queue.
    **({"TASKS_BACKEND": os.environ.get("DWF_TASKS_BACKEND", "default"),
        "TASKS_QUEUE": os.environ["DWF_TASKS_QUEUE"]} if TASKS_INSTALLED else {}),
}

# Threads and subprocesses in tests open connections on purpose.
SILENCED_SYSTEM_CHECKS = ["django_workflows.W002"]

# The example project's shop: its workflows, wizard and demo are tested in tests/example.
INSTALLED_APPS.append("example_project.shop")
