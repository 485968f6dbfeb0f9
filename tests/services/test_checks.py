"""System checks: one test (at least) per check id, each building the broken situation.

Broken definitions come from real imports of the modules in
``tests/testapp/broken/`` (through ``registry.autodiscover``) or from
definitions registered by hand; settings from ``override_settings``.
"""

from __future__ import annotations

import copy

import pytest
from django.apps import apps
from django.conf import settings
from django.core.checks import Error, Warning, run_checks
from django.test import override_settings

from django_workflows import Step, Workflow, checks, register, registry
from django_workflows.runners.immediate import Runner as ImmediateRunner

SOUND_SQLITE = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": "site.sqlite3",
    "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL;"},
}
SOUND_Q_CLUSTER = {"timeout": 60, "retry": 120, "max_attempts": 1}

# override_settings(DATABASES=...) only changes what the checks read; it warns so.
databases_overridden = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")


@pytest.fixture(autouse=True)
def restore_registry():
    """Put the registry back as the app's start-up left it."""
    definitions = dict(registry._definitions)
    origins = dict(registry._origins)
    errors = list(registry.discovery_errors)
    yield
    for workflow_id in [key for key in registry._definitions if key not in definitions]:
        registry.unregister(workflow_id)
    registry._definitions.update(definitions)
    registry._origins.update(origins)
    registry.discovery_errors[:] = errors


@pytest.fixture
def django_q_installed(monkeypatch):
    """django-q2 counts as installed, whatever INSTALLED_APPS says."""
    is_installed = apps.is_installed
    monkeypatch.setattr(apps, "is_installed",
                        lambda name: name == "django_q" or is_installed(name))


def definition_problems() -> list[Error]:
    return checks.check_definitions()


def with_id(problems, check_id: str) -> list:
    return [problem for problem in problems if problem.id == f"django_workflows.{check_id}"]


def databases(**default) -> dict:
    return {"default": {**copy.deepcopy(settings.DATABASES["default"]), **default}}


# -- definitions ----------------------------------------------------------------------------


def test_the_project_has_no_definition_problems():
    assert definition_problems() == []


def test_e001_a_transition_naming_an_unknown_step():
    registry.autodiscover("broken.unknown_step")

    (problem,) = with_id(definition_problems(), "E001")

    assert isinstance(problem, Error)
    assert 'transition "start" -> "nowhere" names unknown step "nowhere"' in problem.msg
    assert problem.hint == "in tests.testapp.broken.unknown_step"


def test_e002_a_workflow_id_defined_twice():
    registry.autodiscover("broken.duplicate_id")

    (problem,) = with_id(definition_problems(), "E002")

    assert problem.msg == ('Workflow id "wizard" is defined twice: in tests.testapp.workflows '
                           "and in tests.testapp.broken.duplicate_id")


def test_e003_nested_workflows_forming_a_cycle():
    register(Workflow(id="cycle-a", steps=[Step("to-b", nested="cycle-b")]))
    register(Workflow(id="cycle-b", steps=[Step("to-a", nested="cycle-a")]))

    problems = with_id(definition_problems(), "E003")

    assert [problem.msg for problem in problems] == [
        'Workflow "cycle-a": nested workflows form a cycle: "cycle-a" -> "cycle-b" -> "cycle-a"',
        'Workflow "cycle-b": nested workflows form a cycle: "cycle-b" -> "cycle-a" -> "cycle-b"',
    ]


def test_e003_a_workflow_nesting_itself():
    register(Workflow(id="itself", steps=[Step("again", nested="itself")]))

    (problem,) = with_id(definition_problems(), "E003")

    assert problem.msg == 'Workflow "itself": nested workflows form a cycle: "itself" -> "itself"'


def test_e004_a_hook_that_is_not_callable():
    registry.autodiscover("broken.not_callable")

    (problem,) = with_id(definition_problems(), "E004")

    assert problem.msg == "Step \"greet\": enter must be callable, not 'say hello'"
    assert problem.hint == "in tests.testapp.broken.not_callable"


def test_e005_another_broken_definition():
    registry.autodiscover("broken.invalid")

    (problem,) = with_id(definition_problems(), "E005")

    assert problem.msg == 'Workflow "broken-invalid": version must be a positive int, not 0'
    assert problem.hint == "in tests.testapp.broken.invalid"


def test_e005_a_task_whose_form_is_not_a_json_schema_names_its_step():
    registry.autodiscover("broken.bad_task")

    (problem,) = with_id(definition_problems(), "E005")
    assert problem.msg.startswith('Step "decision": task: form is not a valid JSON Schema')
    assert problem.hint == "in tests.testapp.broken.bad_task"


@pytest.mark.django_db
def test_w020_a_task_candidate_naming_no_group_or_permission():
    registry.autodiscover("broken.unknown_candidates")

    problems = with_id(checks.check_task_candidates(databases=["default"]), "W020")

    assert sorted(p.msg for p in problems if '"broken-candidates"' in p.msg) == [
        'Workflow "broken-candidates": the task of step "decision" names group '
        '"nobody-here", which does not exist',
        'Workflow "broken-candidates": the task of step "decision" names permission '
        '"shop.no_such", which does not exist']


@pytest.mark.django_db
def test_w020_names_the_senders_of_a_signal_durable_code_waits_for():
    problems = with_id(checks.check_task_candidates(databases=["default"]), "W020")

    assert 'Workflow "durable-billing": the signal "paid" of step "bill" names group ' \
           '"payment-bots", which does not exist' in [p.msg for p in problems]


def test_w020_is_not_asked_without_a_database():
    registry.autodiscover("broken.unknown_candidates")

    assert checks.check_task_candidates() == []


def test_e006_a_nested_workflow_id_that_is_not_registered():
    register(Workflow(id="lonely", steps=[Step("nest", nested="missing")]))

    (problem,) = with_id(definition_problems(), "E006")

    assert problem.msg == ('Workflow "lonely": step "nest" nests workflow "missing", '
                           "which is not registered")


@pytest.mark.django_db  # Django 6.1's run_checks() reads every database's features
def test_definition_problems_are_reported_by_django_check():
    registry.autodiscover("broken.unknown_step")

    ids = {problem.id for problem in run_checks() if problem.id.startswith("django_workflows")}

    assert "django_workflows.E001" in ids


# -- settings -------------------------------------------------------------------------------


def test_the_test_settings_have_no_setting_problems():
    assert checks.check_settings() == []


@override_settings(DJANGO_WORKFLOWS={"LOCK_TIMEOUT": -1})
def test_e010_a_setting_that_is_not_a_positive_number():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert problem.msg == "DJANGO_WORKFLOWS['LOCK_TIMEOUT'] must be a positive number, not -1"


@override_settings(DJANGO_WORKFLOWS={"MAX_STATE_BYTES": True})
def test_e010_a_boolean_is_not_a_number():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert "'MAX_STATE_BYTES'" in problem.msg


@override_settings(DJANGO_WORKFLOWS={"PUBLIC_SCHEMA": "yes"})
def test_e010_a_switch_that_is_not_true_or_false():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert problem.msg == "DJANGO_WORKFLOWS['PUBLIC_SCHEMA'] must be True or False, not 'yes'"


@pytest.mark.parametrize("value", [True, False])
def test_a_switch_set_to_true_or_false_passes(value):
    with override_settings(DJANGO_WORKFLOWS={"PUBLIC_SCHEMA": value}):
        assert checks.check_settings() == []


@override_settings(DJANGO_WORKFLOWS={"LOCK_TIMOUT": 3})
def test_e010_an_unknown_setting():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert problem.msg == "DJANGO_WORKFLOWS['LOCK_TIMOUT'] is not a setting".replace(
        "LOCK_TIMEOUT", "LOCK_TIMOUT")
    assert "LOCK_TIMEOUT" in problem.hint


@override_settings(DJANGO_WORKFLOWS={"RUNNER": "nowhere.Runner"})
def test_e010_a_runner_that_cannot_be_imported():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert problem.msg.startswith("DJANGO_WORKFLOWS['RUNNER'] cannot be imported: ")
    assert "nowhere" in problem.msg


@override_settings(DJANGO_WORKFLOWS={"RUNNER": ImmediateRunner})
def test_a_runner_given_as_a_class_passes():
    assert checks.check_settings() == []


@override_settings(DJANGO_WORKFLOWS={"RUNNER": 3})
def test_e010_a_runner_that_is_neither_a_dotted_path_nor_a_class():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert problem.msg == ("DJANGO_WORKFLOWS['RUNNER'] must be a dotted path or a runner "
                           "class, not 3")


@override_settings(DJANGO_WORKFLOWS=["LOCK_TIMEOUT", 3])
def test_e010_a_setting_that_is_not_a_dict():
    (problem,) = with_id(checks.check_settings(), "E010")

    assert problem.msg == "DJANGO_WORKFLOWS must be a dict"


# -- django-q2 ------------------------------------------------------------------------------


@override_settings(Q_CLUSTER={**SOUND_Q_CLUSTER, "retry": 60})
def test_e020_retry_not_larger_than_the_task_timeout(django_q_installed):
    (problem,) = with_id(checks.check_django_q(), "E020")

    assert problem.msg == ("Q_CLUSTER['retry'] (60) must be larger than "
                           "Q_CLUSTER['timeout'] (60)")


@override_settings(Q_CLUSTER={"timeout": 60, "retry": 120})
def test_e021_unbounded_max_attempts(django_q_installed):
    (problem,) = with_id(checks.check_django_q(), "E021")

    assert problem.msg == "Q_CLUSTER['max_attempts'] is unbounded"


@databases_overridden
def test_w002_workers_reconnecting_for_every_task(django_q_installed):
    with override_settings(Q_CLUSTER=SOUND_Q_CLUSTER, DATABASES=databases(CONN_MAX_AGE=0)):
        (problem,) = with_id(checks.check_django_q(), "W002")

    assert isinstance(problem, Warning)
    assert "CONN_MAX_AGE" in problem.msg


@databases_overridden
def test_a_sound_django_q_configuration_passes(django_q_installed):
    with override_settings(Q_CLUSTER=SOUND_Q_CLUSTER, DATABASES=databases(CONN_MAX_AGE=600)):
        assert checks.check_django_q() == []


@override_settings(Q_CLUSTER={})
def test_without_django_q_its_settings_are_not_checked(monkeypatch):
    monkeypatch.setattr(apps, "is_installed", lambda name: False)

    assert checks.check_django_q() == []


# -- databases ------------------------------------------------------------------------------

ORACLE = {"ENGINE": "django.db.backends.oracle", "NAME": "legacy"}


class ElsewhereThanOracle:
    """A database router that keeps django_workflows' tables off the "legacy" database."""

    def allow_migrate(self, db: str, app_label: str, **hints: object) -> bool | None:
        return False if db == "legacy" and app_label == "django_workflows" else None


@databases_overridden
def test_e030_oracle_is_not_supported():
    with override_settings(DATABASES={"default": SOUND_SQLITE, "legacy": ORACLE}):
        (problem,) = with_id(checks.check_oracle(), "E030")

    assert isinstance(problem, Error)
    assert problem.msg == 'Database "legacy" is Oracle, which django-workflows does not support'


@databases_overridden
def test_e030_an_oracle_database_our_tables_are_kept_off_passes():
    with override_settings(DATABASES={"default": SOUND_SQLITE, "legacy": ORACLE},
                           DATABASE_ROUTERS=[ElsewhereThanOracle()]):
        assert checks.check_oracle() == []


@databases_overridden
def test_postgresql_mariadb_and_sqlite_pass_the_database_check():
    with override_settings(DATABASES={
            "default": SOUND_SQLITE,
            "pg": {"ENGINE": "django.db.backends.postgresql", "NAME": "site"},
            "maria": {"ENGINE": "django.db.backends.mysql", "NAME": "site"}}):
        assert checks.check_oracle() == []


# -- SQLite ---------------------------------------------------------------------------------


@databases_overridden
def test_w001_sqlite_without_immediate_transactions_wal_and_a_timeout():
    with override_settings(DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                                                  "NAME": "site.sqlite3"}}):
        (problem,) = with_id(checks.check_sqlite(), "W001")

    assert isinstance(problem, Warning)
    assert problem.msg == (
        'Database "default" is SQLite without "transaction_mode": "IMMEDIATE", '
        'a "timeout" (seconds to wait for the write lock), '
        '"init_command": "PRAGMA journal_mode=WAL;"')


@databases_overridden
def test_w001_names_only_what_is_missing():
    config = copy.deepcopy(SOUND_SQLITE)
    del config["OPTIONS"]["timeout"]
    with override_settings(DATABASES={"other": config}):
        (problem,) = with_id(checks.check_sqlite(), "W001")

    assert problem.msg == ('Database "other" is SQLite without a "timeout" '
                           "(seconds to wait for the write lock)")


@databases_overridden
def test_a_sound_sqlite_configuration_passes():
    with override_settings(DATABASES={"default": SOUND_SQLITE}):
        assert checks.check_sqlite() == []


@pytest.mark.parametrize(("module", "message"), [
    ("limit_max", 'Operation "charge": concurrency max must be an int >= 1, not 0'),
    ("rate_window", 'Operation "call": rate per must be a positive number of seconds or a '
                    "timedelta, not 0"),
    ("limit_key", 'Branch "courier": concurrency: key must be a non-empty string of at most '
                  "200 characters or a callable, not 7"),
])
def test_e008_a_broken_limit_names_its_operation_or_branch(module, message):
    registry.autodiscover(f"broken.{module}")

    (problem,) = with_id(definition_problems(), "E008")

    assert problem.msg == message
    assert problem.hint == f"in tests.testapp.broken.{module}"
