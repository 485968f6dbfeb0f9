"""The ``DJANGO_WORKFLOWS`` setting: one dict, read through an object with defaults.

``workflow_settings.LOCK_TIMEOUT`` reads the project's value or the default;
the object reloads on ``setting_changed``, so ``override_settings`` works.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

SETTING_NAME = "DJANGO_WORKFLOWS"

DEFAULTS: dict[str, Any] = {
    # Largest state, in bytes of JSON; a bigger one is refused (413 in the API).
    "MAX_STATE_BYTES": 256 * 1024,
    # Seconds a command waits for an instance's row lock before it answers "busy".
    "LOCK_TIMEOUT": 5.0,
    # A cancel waits longer: it must not be lost behind a slow command.
    "CANCEL_LOCK_TIMEOUT": 60.0,
    # A running attempt writes a heartbeat this often (seconds) ...
    "HEARTBEAT_INTERVAL": 5.0,
    # ... and counts as interrupted when none came for this long.
    "HEARTBEAT_TIMEOUT": 60.0,
    # Progress and log lines of a running operation are written at most this often.
    "PROGRESS_INTERVAL": 1.0,
    # How background work runs; None picks django-q2 when it is installed.
    "RUNNER": None,
    # Seconds between two looks for expired heartbeats and lost attempts (deadlines are
    # fired as they fall due).
    "SWEEP_INTERVAL": 5.0,
    # Every django-q2 worker, and every Tasks worker that lives on (db_worker), runs a sweeper
    # thread (one of them sweeps at a time).
    "SWEEP_IN_WORKERS": True,
    # An item of the sweep (a deadline, a kept signal, a schedule...) that fails this many
    # times in a row is set aside until someone tries it again (the admin's sweep failures);
    # before that it is tried again later each time (SWEEP_INTERVAL doubled, up to 5 min).
    "SWEEP_RETRIES": 5,
    # A queued attempt no worker claimed for this long is handed to the runner again.
    "REDISPATCH_AFTER": 120.0,
    # The Tasks runner (runners/tasks/): the backend (an alias of Django's TASKS setting) and
    # the queue its attempts go to, and the queue of the sweep's own Tasks (None: the same).
    "TASKS_BACKEND": "default",
    "TASKS_QUEUE": "default",
    "TASKS_SWEEP_QUEUE": None,
    # A signal no step waited for is kept this long (seconds) for the step that will.
    "SIGNAL_RETENTION": 7 * 24 * 3600,
    # PostgreSQL: the hot statements are prepared once per connection (PREPARE, then
    # EXECUTE). False behind a pooler that shares server connections per transaction.
    "PREPARED_STATEMENTS": True,
    # Idempotency keys are kept this long (seconds).
    "IDEMPOTENCY_KEY_TTL": 24 * 3600,
    # ``workflows_purge`` deletes completed and cancelled instances finished this
    # many days ago (None: it needs --older-than).
    "RETENTION_DAYS": None,
    # The admin's changelists count rows exactly up to this many; past it they show
    # PostgreSQL's estimate, since counting every row of a big table is slow.
    "ADMIN_EXACT_COUNT_LIMIT": 10_000,
    # An admin bulk action runs its command on at most this many instances at once.
    "ADMIN_BULK_LIMIT": 500,
    # The API's OpenAPI schema (and a Swagger UI from ``swagger_ui_view``) is served to
    # signed-in users only; True serves it to anyone, as a public API's would be.
    "PUBLIC_SCHEMA": False,
    # Who watches the services: observers' classes, by dotted path, each given a report of
    # every unit of work and turn of the sweep (docs/observability.md).
    "OBSERVERS": [],
    # Prometheus metrics (the metrics extra) and OpenTelemetry spans (the otel extra):
    # docs/observability.md. Off, the services pay one branch for them.
    "METRICS": False,
    "TRACING": False,
    # The bearer token a scraper sends to the /metrics view (None: only signed-in users
    # with the permission to view workflow instances may read it).
    "METRICS_TOKEN": None,
    # Seconds a scrape reuses the gauges read from the tables (instances, tasks, attempts).
    "METRICS_CACHE": 5.0,
    # Agents (the ai extra, docs/agents.md): the Pydantic AI model of agents made without one
    # ("openai:gpt-5.2"), and its provider's API key (None: the provider reads its own
    # environment variable, OPENAI_API_KEY).
    "AI_MODEL": None,
    "AI_API_KEY": None,
}

IMPORT_STRINGS = {"RUNNER"}

IMMEDIATE_RUNNER = "django_workflows.runners.immediate.Runner"
DJANGO_Q_RUNNER = "django_workflows.runners.django_q.Runner"
TASKS_RUNNER = "django_workflows.runners.tasks.Runner"


def default_runner() -> str:
    return DJANGO_Q_RUNNER if apps.is_installed("django_q") else IMMEDIATE_RUNNER


def runner_is(path: str) -> bool:
    """Whether ``RUNNER`` names the runner at ``path`` (False when it cannot be imported:
    the settings check says why)."""
    try:
        runner = workflow_settings.RUNNER
    except ImportError:
        return False
    return f"{getattr(runner, '__module__', '')}.{getattr(runner, '__qualname__', '')}" == path


class WorkflowSettings:
    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    @property
    def user_settings(self) -> dict[str, Any]:
        return getattr(settings, SETTING_NAME, None) or {}

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid {SETTING_NAME} setting: {name!r}")
        if name in self._cache:
            return self._cache[name]
        value = self.user_settings.get(name, DEFAULTS[name])
        if name == "RUNNER" and value is None:
            value = default_runner()
        if name in IMPORT_STRINGS and isinstance(value, str):
            value = import_string(value)
        self._cache[name] = value
        return value

    def reload(self) -> None:
        self._cache.clear()


workflow_settings = WorkflowSettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        workflow_settings.reload()


setting_changed.connect(_reload)
