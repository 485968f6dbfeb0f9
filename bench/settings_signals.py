"""Django settings for ``bench/signals.py``: ``bench/settings_operations.py`` and the REST API
mounted at ``/api/`` (bench/urls_signals.py), authenticated with DRF's token as docs/api.md
recommends for scripts."""

from __future__ import annotations

from bench.settings_operations import *  # noqa: F403
from bench.settings_operations import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework", "rest_framework.authtoken",
                  "django_filters", "drf_spectacular"]
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "bench.urls_signals"
MIDDLEWARE: list[str] = []  # a token per request: no session, no CSRF
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
