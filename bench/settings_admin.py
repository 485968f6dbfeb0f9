"""Django settings for ``bench/admin_changelist.py``: the admin on PostgreSQL.

Two databases, ``default`` (``DWF_BENCH_DB``, the small table) and ``large``
(``DWF_BENCH_DB_LARGE``); the script creates both and drops them at the end.
``SIZE`` routes every query to one of them, so the script can time the two
sizes request by request, in turns, and the load of the machine hits both alike.
"""

from __future__ import annotations

import os

SECRET_KEY = "django-workflows-bench-not-secret"
DEBUG = False  # no query log
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["testserver"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STATIC_URL = "/static/"
ROOT_URLCONF = "bench.urls_admin"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.admin",
    "django_workflows",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]

_SERVER = {
    "ENGINE": "django.db.backends.postgresql",
    "HOST": os.environ.get("DWF_BENCH_HOST", "127.0.0.1"),
    "PORT": os.environ.get("DWF_BENCH_PORT", "5432"),
    "USER": os.environ.get("DWF_BENCH_USER", "postgres"),
    "PASSWORD": os.environ.get("DWF_BENCH_PASSWORD", ""),
    "CONN_MAX_AGE": None,  # persistent, as in web processes
}
DATABASES = {
    "default": {**_SERVER, "NAME": os.environ.get("DWF_BENCH_DB", "dwf_bench_admin")},
    "large": {**_SERVER, "NAME": os.environ.get("DWF_BENCH_DB_LARGE", "dwf_bench_admin_large")},
}


class SizeRouter:
    """Sends every query to ``alias``: the database of the size being timed."""

    alias = "default"

    def db_for_read(self, model, **hints):
        return self.alias

    def db_for_write(self, model, **hints):
        return self.alias

    def allow_relation(self, first, second, **hints):
        return True

    def allow_migrate(self, db, app_label, **hints):
        return True


SIZE = SizeRouter()
DATABASE_ROUTERS = [SIZE]

DJANGO_WORKFLOWS = {"RUNNER": "django_workflows.runners.immediate.Runner"}
