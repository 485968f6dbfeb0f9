"""System checks: broken definitions and risky settings fail (or warn) at start-up.

| id | what |
| --- | --- |
| E001 | a transition names an unknown step |
| E002 | an id is used twice (workflows, steps, operations, branches) |
| E003 | nested workflows form a cycle |
| E004 | a hook is not callable |
| E005 | another broken definition |
| E006 | a nested workflow id that is not registered |
| E007 | a ``Timer`` with neither ``after`` nor ``until`` (or both) |
| E008 | a ``Limit`` or ``Rate`` of an operation or a branch: ``max`` or ``limit`` below 1, |
|      | a window that is not a positive number of seconds, a key neither a string nor a   |
|      | callable                                                                          |
| E010 | a bad ``DJANGO_WORKFLOWS`` setting (the Tasks runner's backend or queues too) |
| E020 | django-q2's ``retry`` does not exceed its largest task ``timeout`` |
| E021 | django-q2's ``max_attempts`` is unbounded |
| E030 | our tables may be migrated to an Oracle database, which is not supported |
| E050 | a schedule names a workflow that is not registered |
| E051 | a schedule's ``cron`` is not a cron expression |
| E052 | a schedule's ``timezone`` is not a time zone this system knows |
| E053 | a ``cron`` schedule without cronsim installed (the ``cron`` extra) |
| E060 | ``METRICS`` on without prometheus-client (the ``metrics`` extra) |
| E061 | ``TRACING`` on without the OpenTelemetry API (the ``otel`` extra) |
| W001 | SQLite without WAL, ``transaction_mode="IMMEDIATE"`` and a busy timeout |
| W002 | django-q2 workers would open a new database connection for every task |
| W020 | a task's candidates or a signal's senders name a group or a permission that does |
|      | not exist |
| W030 | no sweep ran lately while deadlines or queued attempts are overdue |
| W031 | the Tasks runner's backend cannot defer Tasks: its sweep cannot run |
| W032 | unfinished instances of a workflow that is not registered, or at a version the code |
|      | cannot load (newer, or older without a ``migrate``)                                |
| W010 | ``django_workflows`` after ``django.contrib.admin``: no task inbox on the admin index |
| W040 | DRF's ``DEFAULT_SCHEMA_CLASS`` is not drf-spectacular's (``api/checks.py``) |
"""

from __future__ import annotations

import importlib.util
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError, router
from django.utils.module_loading import import_string

from . import registry
from .conf import DEFAULTS, SETTING_NAME, TASKS_RUNNER, runner_is
from .engine import FINISHED, Workflow
from .engine.schedules import cron_library_installed
from .services.sweep import sweep_health

# Settings that are switches; every other one but RUNNER, RETENTION_DAYS and the names below
# is a number.
BOOLEAN_SETTINGS = {"PREPARED_STATEMENTS", "PUBLIC_SCHEMA", "SWEEP_IN_WORKERS", "METRICS",
                    "TRACING"}
# Settings that are names (the Tasks runner's backend and queues); None: the default.
NAME_SETTINGS = {"TASKS_BACKEND", "TASKS_QUEUE", "TASKS_SWEEP_QUEUE", "METRICS_TOKEN"}
# Names that may be None: the default.
OPTIONAL_NAMES = {"TASKS_SWEEP_QUEUE", "METRICS_TOKEN"}

DEFINITION_KINDS = {"unknown_step": "E001", "duplicate_id": "E002", "not_callable": "E004",
                    "timer_without_time": "E007", "bad_limit": "E008", "bad_cron": "E051",
                    "unknown_timezone": "E052"}


@register(Tags.models)
def check_definitions(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = [
        Error(str(error), hint=f"in {module}",
              id=f"django_workflows.{DEFINITION_KINDS.get(error.kind, 'E005')}")
        for module, error in registry.discovery_errors
    ]
    for definition in registry.all_definitions():
        errors += _check_nested(definition)
    return errors


@register(Tags.models)
def check_schedules(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Registered schedules: their workflow is registered, their cron can be read (a bad
    expression or time zone fails when the schedule is made: E051 and E052 above)."""
    errors = []
    for schedule in registry.all_schedules():
        if registry.find(schedule.workflow_id) is None:
            errors.append(Error(
                f'Schedule "{schedule.id}" starts workflow "{schedule.workflow_id}", which is '
                "not registered", hint="Correct the id, or register the workflow (a "
                "workflows.py module, or register()).", id="django_workflows.E050"))
        if schedule.cron is not None and not cron_library_installed():
            errors.append(Error(
                f'Schedule "{schedule.id}" has cron "{schedule.cron}", and cronsim, which reads '
                "cron expressions, is not installed",
                hint='pip install "django-durable-workflows[cron]" (or use every=).',
                id="django_workflows.E053"))
    return errors


def _nested_of(definition: Workflow) -> list[tuple[str, Workflow | str]]:
    return [(step.id, step.nested) for step in definition.steps if step.nested is not None]


def _check_nested(definition: Workflow) -> list[Error]:
    errors = []
    for step_id, nested in _nested_of(definition):
        if isinstance(nested, str) and registry.find(nested) is None:
            errors.append(Error(
                f'Workflow "{definition.id}": step "{step_id}" nests workflow "{nested}", '
                "which is not registered", id="django_workflows.E006"))
    cycle = _find_cycle(definition, [definition.id])
    if cycle:
        errors.append(Error(
            f'Workflow "{definition.id}": nested workflows form a cycle: '
            + " -> ".join(f'"{part}"' for part in cycle),
            hint="A workflow cannot contain itself, directly or through its children.",
            id="django_workflows.E003"))
    return errors


def _find_cycle(definition: Workflow, path: list[str]) -> list[str] | None:
    for _step, nested in _nested_of(definition):
        child = registry.find(nested) if isinstance(nested, str) else nested
        if child is None:
            continue
        if child.id in path:
            return [*path, child.id]
        found = _find_cycle(child, [*path, child.id])
        if found:
            return found
    return None


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


@register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    user = getattr(settings, SETTING_NAME, None) or {}
    if not isinstance(user, dict):
        return [Error(f"{SETTING_NAME} must be a dict", id="django_workflows.E010")]
    errors = []
    for name, value in user.items():
        if name not in DEFAULTS:
            errors.append(Error(f"{SETTING_NAME}[{name!r}] is not a setting",
                                hint=f"Known settings: {', '.join(sorted(DEFAULTS))}",
                                id="django_workflows.E010"))
        elif name == "RUNNER":
            if isinstance(value, str):
                try:
                    import_string(value)
                except ImportError as error:
                    errors.append(Error(f"{SETTING_NAME}['RUNNER'] cannot be imported: {error}",
                                        id="django_workflows.E010"))
            elif value is not None and not callable(value):
                errors.append(Error(f"{SETTING_NAME}['RUNNER'] must be a dotted path or a "
                                    f"runner class, not {value!r}", id="django_workflows.E010"))
        elif name == "RETENTION_DAYS" and value is None:
            pass
        elif name == "OBSERVERS":
            errors += _observer_errors(value)
        elif name in NAME_SETTINGS:
            if not (isinstance(value, str) and value) and not (
                    value is None and name in OPTIONAL_NAMES):
                errors.append(Error(f"{SETTING_NAME}[{name!r}] must be a name (a non-empty "
                                    f"string), not {value!r}", id="django_workflows.E010"))
        elif name in BOOLEAN_SETTINGS:
            if not isinstance(value, bool):
                errors.append(Error(f"{SETTING_NAME}[{name!r}] must be True or False, "
                                    f"not {value!r}", id="django_workflows.E010"))
        elif not _positive_number(value):
            errors.append(Error(f"{SETTING_NAME}[{name!r}] must be a positive number, "
                                f"not {value!r}", id="django_workflows.E010"))
    return errors


@register()
def check_tasks_runner(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The Tasks runner's backend and queues exist, and the backend can defer (its sweep)."""
    if not runner_is(TASKS_RUNNER):
        return []
    from .runners.tasks.checks import check_tasks_settings

    return check_tasks_settings()


@register()
def check_observability(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """``METRICS`` and ``TRACING`` need their extras (docs/observability.md)."""
    user = getattr(settings, SETTING_NAME, None) or {}
    if not isinstance(user, dict):
        return []
    needs = [("METRICS", "prometheus_client", "prometheus-client", "metrics", "E060"),
             ("TRACING", "opentelemetry.trace", "the OpenTelemetry API", "otel", "E061")]
    return [
        Error(f"{SETTING_NAME}[{name!r}] is on, and {package} is not installed",
              hint=f'pip install "django-durable-workflows[{extra}]", or turn it off.',
              id=f"django_workflows.{check_id}")
        for name, module, package, extra, check_id in needs
        if user.get(name) is True and not _installed(module)
    ]


def _observer_errors(value: Any) -> list[Error]:
    """``OBSERVERS``: dotted paths of classes that import (their instances get the services'
    reports: services/reports.py)."""
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
        return [Error(f"{SETTING_NAME}['OBSERVERS'] must be a list of dotted paths, not "
                      f"{value!r}", id="django_workflows.E010")]
    errors = []
    for path in value:
        try:
            import_string(path)
        except ImportError as error:
            errors.append(Error(f"{SETTING_NAME}['OBSERVERS'] names {path!r}, which cannot be "
                                f"imported: {error}", id="django_workflows.E010"))
    return errors


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


@register()
def check_oracle(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Supported: PostgreSQL, MariaDB/MySQL and SQLite. Read from the settings: no connection."""
    instances = apps.get_model("django_workflows", "WorkflowInstance")
    return [
        Error(f'Database "{alias}" is Oracle, which django-workflows does not support',
              hint="Keep django_workflows' tables on PostgreSQL, MariaDB/MySQL or SQLite "
                   "(a database router's allow_migrate can keep them off this database).",
              id="django_workflows.E030")
        for alias, database in settings.DATABASES.items()
        # Django's backend and GeoDjango's: django.[contrib.gis.]db.backends.oracle
        if str(database.get("ENGINE", "")).endswith(".oracle")
        and router.allow_migrate_model(alias, instances)
    ]


@register(Tags.database)
def check_sqlite(app_configs: Any = None, databases: Any = None, **kwargs: Any
                 ) -> list[Warning]:
    warnings = []
    for alias, database in settings.DATABASES.items():
        if database.get("ENGINE") != "django.db.backends.sqlite3":
            continue
        options = database.get("OPTIONS", {})
        missing = []
        if options.get("transaction_mode") != "IMMEDIATE":
            missing.append('"transaction_mode": "IMMEDIATE"')
        if not options.get("timeout"):
            missing.append('a "timeout" (seconds to wait for the write lock)')
        if "journal_mode=wal" not in options.get("init_command", "").replace(" ", "").lower():
            missing.append('"init_command": "PRAGMA journal_mode=WAL;"')
        if missing:
            warnings.append(Warning(
                f'Database "{alias}" is SQLite without {", ".join(missing)}',
                hint="Without them concurrent workflow commands fail with 'database is "
                     "locked' instead of waiting their turn.",
                id="django_workflows.W001"))
    return warnings


@register()
def check_django_q(app_configs: Any = None, **kwargs: Any) -> list[Error | Warning]:
    if not apps.is_installed("django_q"):
        return []
    cluster = getattr(settings, "Q_CLUSTER", {}) or {}
    problems: list[Error | Warning] = []
    timeout = cluster.get("timeout")
    retry = cluster.get("retry", 60)
    if timeout is not None and retry <= timeout:
        problems.append(Error(
            f"Q_CLUSTER['retry'] ({retry}) must be larger than Q_CLUSTER['timeout'] ({timeout})",
            hint="Otherwise the broker hands a task that is still running to a second worker.",
            id="django_workflows.E020"))
    if not cluster.get("max_attempts"):
        problems.append(Error(
            "Q_CLUSTER['max_attempts'] is unbounded",
            hint="Set it (1 is enough: django-workflows retries operations itself), or a task "
                 "that crashes its worker is retried forever.",
            id="django_workflows.E021"))
    default = settings.DATABASES.get("default", {})
    if not default.get("CONN_MAX_AGE") and not default.get("OPTIONS", {}).get("pool"):
        problems.append(Warning(
            "django-q2 workers open a new database connection for every task "
            "(CONN_MAX_AGE is 0 and no connection pool is configured)",
            hint="Set CONN_MAX_AGE (for example 600) or PostgreSQL's connection pool: about "
                 "8x more tasks per second.",
            id="django_workflows.W002"))
    return problems


@register()
def check_app_order(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Our admin index template (the inbox link) is found only before the admin's own."""
    names = [config.name for config in apps.get_app_configs()]
    if "django.contrib.admin" not in names or "django_workflows" not in names:
        return []
    if names.index("django_workflows") < names.index("django.contrib.admin"):
        return []
    return [Warning(
        '"django_workflows" comes after "django.contrib.admin" in INSTALLED_APPS, so the '
        "admin's index page shows no link to the task inbox",
        hint='List "django_workflows" before "django.contrib.admin" (the inbox itself is '
             "under Workflows > Tasks either way).", id="django_workflows.W010")]


@register(Tags.database)
def check_task_candidates(app_configs: Any = None, databases: Any = None,
                          **kwargs: Any) -> list[Warning]:
    """Groups and permissions the tasks and the signals name: data, made after the code, so
    a warning."""
    if not databases:
        return []
    # Groups and permissions are rows of django.contrib.auth, asked for only here.
    from django.contrib.auth.models import Group, Permission

    named: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for definition in registry.all_definitions():
        signals = definition.signal_waits()
        for step in definition.steps:
            names: list[tuple[str, str]] = []  # (candidate, what names it)
            task = step.task
            if task is not None:
                static = () if callable(task.candidates) else task.candidates
                names += [(c, f'the task of step "{step.id}"')
                          for c in (*static, *task.escalate_to)]
            # A step's own wait, and the signals its operations' durable code waits for.
            names += [(c, f'the signal "{signal.name}" of step "{step.id}"')
                      for where, signal in signals if where == step.id for c in signal.senders]
            for candidate, where in names:
                kind, _, name = candidate.partition(":")
                if kind in ("group", "perm"):
                    named.setdefault((kind, name), []).append((definition.id, step.id, where))
    try:
        groups = set(Group.objects.filter(
            name__in=[name for kind, name in named if kind == "group"]).values_list(
            "name", flat=True))
        permissions = {f"{app}.{codename}" for app, codename in Permission.objects.values_list(
            "content_type__app_label", "codename")} if any(k == "perm" for k, _ in named) else set()
    except DatabaseError:
        return []  # not migrated yet: nothing to compare with
    problems = []
    for (kind, name), places in sorted(named.items()):
        if (kind == "group" and name in groups) or (kind == "perm" and name in permissions):
            continue
        what = "group" if kind == "group" else "permission"
        for workflow, _step, where in places:
            problems.append(Warning(
                f'Workflow "{workflow}": {where} names {what} "{name}", which does not exist',
                hint="Make it (a data migration, or the admin), or correct the name; until "
                     "then nobody is that candidate.", id="django_workflows.W020"))
    return problems


@register(Tags.database)
def check_sweep(app_configs: Any = None, databases: Any = None, **kwargs: Any
                ) -> list[Warning]:
    """Work waits for a sweep and none ran lately (asked when the database is checked)."""
    if not databases:
        return []
    try:
        health = sweep_health()
    except DatabaseError:
        return []  # not migrated yet
    if not health.stuck:
        return []
    since = f"since {health.swept_at:%Y-%m-%d %H:%M:%S} UTC" if health.swept_at else "yet"
    return [Warning(
        f"No sweep has run {since}, and {health.overdue} deadlines or queued attempts are "
        "overdue: nothing times out, no retry delay ends and no lost work is recovered",
        hint="Run `manage.py qcluster` (its workers sweep by themselves); with the Tasks "
             "runner, the backend's worker (`manage.py db_worker`, or `manage.py rqworker "
             "--with-scheduler --worker-class django_workflows.runners.tasks.rq_worker."
             "Worker`); or else `manage.py workflows_sweep --loop`.",
        id="django_workflows.W030")]


@register(Tags.database)
def check_orphaned_instances(app_configs: Any = None, databases: Any = None, **kwargs: Any
                             ) -> list[Warning]:
    """Unfinished instances whose workflow the code no longer has, or whose version it
    cannot load (saved by newer code, or older without a migration): no command moves
    them, and the sweep sets their deadlines aside (asked when the database is checked)."""
    if not databases:
        return []
    instances = apps.get_model("django_workflows", "WorkflowInstance")
    try:
        found = list(instances.objects.exclude(status__in=FINISHED)
                     .order_by().values_list("workflow", "version").distinct()[:1000])
    except DatabaseError:
        return []  # not migrated yet
    problems = []
    for workflow, version in sorted(found):
        definition = registry.find(workflow)
        if definition is None:
            what = f'workflow "{workflow}", which is not registered'
        elif version > definition.version:
            what = (f'workflow "{workflow}" at version {version}, newer than the code\'s '
                    f"{definition.version}")
        elif version < definition.version and definition.migrate is None:
            what = (f'workflow "{workflow}" at version {version}, which version '
                    f"{definition.version} cannot migrate (it has no migrate)")
        else:
            continue
        rows = instances.objects.filter(workflow=workflow, version=version).exclude(
            status__in=FINISHED)
        ids = [str(pk) for pk in rows.order_by("created_at").values_list("pk", flat=True)[:5]]
        count = rows.count()
        more = f" and {count - len(ids)} more" if count > len(ids) else ""
        problems.append(f"{count} unfinished instance(s) of {what}: {', '.join(ids)}{more}")
    if not problems:
        return []
    return [Warning(
        "Instances the code can no longer move: " + "; ".join(problems),
        hint="Register the workflow again, or give it a migrate for that version "
             "(docs/versioning.md); or cancel or delete those instances. The sweep sets "
             "their deadlines aside meanwhile (the admin's sweep failures).",
        id="django_workflows.W032")]
