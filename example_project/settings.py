"""Settings for the example site: SQLite and django-q2's ORM broker, nothing to set up."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import django

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = "django-workflows-example-not-secret"
DEBUG = True
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
USE_TZ = True
TIME_ZONE = "UTC"


def installed(module: str) -> bool:
    """Whether ``module`` is there to import. False, not an error, when a dotted name's parent
    package is missing too (find_spec imports the parent first: opentelemetry for
    opentelemetry.sdk), as in a .venv with only the extras ./scripts/demo installs."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


HAS_DJANGO_Q = installed("django_q")

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_workflows",  # before the admin: its index page then shows the task inbox
    "django.contrib.admin",
    "django.contrib.staticfiles",
    "example_project.shop",
]
if HAS_DJANGO_Q:
    INSTALLED_APPS.append("django_q")

# The REST API at /api/ (the [api] extra), its OpenAPI schema at /api/schema/ and
# Swagger UI at /api/docs/, served from drf-spectacular-sidecar: no CDN needed.
HAS_API = installed("rest_framework")
if HAS_API:
    INSTALLED_APPS += ["rest_framework", "rest_framework.authtoken", "django_filters",
                       "drf_spectacular", "drf_spectacular_sidecar"]
    REST_FRAMEWORK = {
        # The session for the shop's pages and the admin; a token for scripts
        # (`manage.py drf_create_token alice`); Basic for a quick `curl -u`, which pays a
        # password hash per request.
        "DEFAULT_AUTHENTICATION_CLASSES": [
            "rest_framework.authentication.SessionAuthentication",
            "rest_framework.authentication.TokenAuthentication",
            "rest_framework.authentication.BasicAuthentication",
        ],
        "EXCEPTION_HANDLER": "django_workflows.api.errors.exception_handler",
        "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    }
    SPECTACULAR_SETTINGS = {
        "TITLE": "django-workflows example",
        "DESCRIPTION": "Workflow definitions and instances: create, read, and drive them.",
        "VERSION": "1",
        "COMPONENT_SPLIT_REQUEST": True,
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
    }

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
WSGI_APPLICATION = "example_project.wsgi.application"

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


def database_from_url(url: str) -> dict[str, object]:
    """A PostgreSQL database from ``postgres://user:password@host:port/name``."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"DWF_DEMO_DATABASE_URL must be a postgres:// URL, not {url!r}")
    return {
        "ENGINE": "django.db.backends.postgresql", "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""), "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "", "PORT": str(parts.port or ""),
        # Persistent connections, checked before each request: a restarted server
        # costs the requests that were running, not every request after it.
        "CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True,
    }


DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        # DWF_DEMO_DB puts it elsewhere (the demo's test uses a temporary file).
        "NAME": os.environ.get("DWF_DEMO_DB") or BASE_DIR / "db.sqlite3",
        # Persistent connections: web processes and workers do not reconnect per request/task.
        "CONN_MAX_AGE": 600,
        # Serialise concurrent writers: WAL, BEGIN IMMEDIATE, a busy timeout.
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
STATIC_URL = "/static/"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "wizard"
# The shop's emails (order shipped, expense rejected, the email confirmation link) are
# printed, not sent, and kept in the demo's mailbox (shop/mailbox.py: the admin's Shop >
# Sent emails, whose links the tour opens). Django 6.1 configures email through MAILERS
# and deprecates EMAIL_BACKEND; 5.2 and 6.0 know only that.
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "example_project.shop.mailbox.EmailBackend"}}
else:
    EMAIL_BACKEND = "example_project.shop.mailbox.EmailBackend"
# The shop's schedules (shop/workflows.py: the nightly stock report) are registered.
SHOP_SCHEDULES = True
# Where the site answers, for the links in its emails.
SHOP_SITE_URL = os.environ.get("SHOP_SITE_URL") or \
    f"http://127.0.0.1:{os.environ.get('DWF_DEMO_PORT') or 8000}"

# The shop's fake payment provider (example_project/shop/payments.py): by default a
# fifth of the charge requests fail (the workflow retries them) and the bank takes a
# few seconds to confirm, so retries and the wait for the bank can be seen in the admin;
# the slow bank (the tour's slow order, pm_card_slow) takes five minutes: time for the
# tour. The provider tells the shop with a webhook signed with WEBHOOK_SECRET, POSTed to
# WEBHOOK_URL (./scripts/demo sets it to its /hooks/payments/); without one, it hands the
# request to the shop's webhook view in its own process.
SHOP_PAYMENTS = {
    "FAILURE_RATE": float(os.environ.get("SHOP_PAYMENT_FAILURE_RATE", "0.2")),
    "LOST_RESPONSE_RATE": float(os.environ.get("SHOP_PAYMENT_LOST_RESPONSE_RATE", "0")),
    "LATENCY": float(os.environ.get("SHOP_PAYMENT_LATENCY", "3")),
    "SLOW_LATENCY": float(os.environ.get("SHOP_PAYMENT_SLOW_LATENCY", "300")),
    "WEBHOOK_URL": os.environ.get("SHOP_PAYMENT_WEBHOOK_URL") or None,
    "WEBHOOK_SECRET": os.environ.get("SHOP_PAYMENT_WEBHOOK_SECRET")
    or "whsec_demo_not_secret",
}
# How long the shop waits for the world outside (shop/times.py), in seconds: the bank's
# confirmation (longer than the slow bank), the reminder of a declined card (three days in
# a shop; a minute in the demo, to see it fire), the email confirmation link's life, and
# when an invoice is due (two weeks in a shop; a minute in the demo, to see its run wake).
SHOP_TIMES = {
    "PAYMENT_CONFIRMATION": float(os.environ.get("SHOP_PAYMENT_CONFIRMATION_TIMEOUT") or
                                  max(600, SHOP_PAYMENTS["SLOW_LATENCY"] + 300)),
    "PAYMENT_REMINDER": float(os.environ.get("SHOP_PAYMENT_REMINDER_AFTER", "60")),
    "EMAIL_LINK": float(os.environ.get("SHOP_EMAIL_LINK_MAX_AGE", str(3 * 24 * 3600))),
    "INVOICE_DUE": float(os.environ.get("SHOP_INVOICE_DUE_AFTER", "60")),
}

# PostgreSQL instead of SQLite (the load test, bench/load.py, runs the site on it):
# DWF_DEMO_DATABASE_URL=postgres://user@127.0.0.1:5432/name. Not DATABASE_URL, which
# the test suite sets for itself and would leak into the demo it starts.
if os.environ.get("DWF_DEMO_DATABASE_URL"):
    DATABASES["default"] = database_from_url(os.environ["DWF_DEMO_DATABASE_URL"])

if HAS_DJANGO_Q:
    # The ORM broker keeps the demo self-contained; retry must exceed timeout.
    # DWF_DEMO_BROKER=redis uses Redis (DWF_DEMO_REDIS_URL, default redis://127.0.0.1:6379/0).
    _redis = os.environ.get("DWF_DEMO_BROKER") == "redis"
    Q_CLUSTER = {
        "name": "example",
        **({"redis": os.environ.get("DWF_DEMO_REDIS_URL", "redis://127.0.0.1:6379/0")}
           if _redis else {"orm": "default"}),
        # Each worker also runs a sweeper thread (one sweeps at a time); none is held by it.
        "workers": int(os.environ.get("DWF_DEMO_WORKERS", "4")),
        "timeout": 60,
        # Longer than any task runs: the slow bank's confirmation attempt (SLOW_LATENCY +
        # 15 s, shop/bank.py) and a heartbeat timeout after it, or the broker would hand
        # it to a second worker while the first still waits for the bank.
        "retry": max(120, int(SHOP_PAYMENTS["SLOW_LATENCY"]) + 120),
        "max_attempts": 1,
        "catch_up": False,
    }

# Prometheus metrics at /metrics and OpenTelemetry traces, each when its extra is installed
# (docs/observability.md). A scraper sends "Authorization: Bearer $METRICS_TOKEN"; a
# signed-in operator may read the page too. DWF_TRACES=console prints the spans.
HAS_METRICS = installed("prometheus_client")
HAS_OTEL = installed("opentelemetry.sdk")
DJANGO_WORKFLOWS = {"METRICS": HAS_METRICS, "TRACING": HAS_OTEL,
                    "METRICS_TOKEN": os.environ.get("METRICS_TOKEN") or None}
if HAS_OTEL and os.environ.get("DWF_TRACES") == "console":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    _tracer_provider = TracerProvider()
    _tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(_tracer_provider)
