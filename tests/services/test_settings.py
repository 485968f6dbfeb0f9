"""The ``DJANGO_WORKFLOWS`` setting, read through ``workflow_settings`` with defaults."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_workflows.conf import DEFAULTS, workflow_settings
from django_workflows.runners import get_runner, immediate

IMMEDIATE = "django_workflows.runners.immediate.Runner"


class ProjectRunner:
    """A runner a project names by its dotted path."""

    def enqueue(self, tokens):
        pass


@override_settings(DJANGO_WORKFLOWS={})
@pytest.mark.parametrize("name", [name for name in DEFAULTS if name != "RUNNER"])
def test_a_setting_the_project_leaves_out_has_its_default(name):
    assert getattr(workflow_settings, name) == DEFAULTS[name]


@override_settings(DJANGO_WORKFLOWS={})
def test_the_documented_defaults():
    assert workflow_settings.MAX_STATE_BYTES == 256 * 1024
    assert workflow_settings.LOCK_TIMEOUT == 5.0
    assert workflow_settings.CANCEL_LOCK_TIMEOUT == 60.0
    assert workflow_settings.HEARTBEAT_TIMEOUT == 60.0


def test_no_setting_at_all_means_every_default():
    with override_settings():
        from django.conf import settings

        del settings.DJANGO_WORKFLOWS
        workflow_settings.reload()
        try:
            assert workflow_settings.LOCK_TIMEOUT == 5.0
        finally:
            workflow_settings.reload()


@override_settings(DJANGO_WORKFLOWS={"LOCK_TIMEOUT": 2.5})
def test_a_project_value_wins_over_the_default():
    assert workflow_settings.LOCK_TIMEOUT == 2.5


@override_settings(DJANGO_WORKFLOWS={"LOCK_TIMEOUT": 2.5})
def test_a_project_value_leaves_the_other_settings_at_their_defaults():
    assert workflow_settings.CANCEL_LOCK_TIMEOUT == 60.0


def test_override_settings_is_seen_at_once_and_undone_after():
    with override_settings(DJANGO_WORKFLOWS={"MAX_STATE_BYTES": 10}):
        assert workflow_settings.MAX_STATE_BYTES == 10
        with override_settings(DJANGO_WORKFLOWS={"MAX_STATE_BYTES": 20}):
            assert workflow_settings.MAX_STATE_BYTES == 20
        assert workflow_settings.MAX_STATE_BYTES == 10
    with override_settings(DJANGO_WORKFLOWS={}):
        assert workflow_settings.MAX_STATE_BYTES == 256 * 1024


def test_a_value_read_before_an_override_is_not_kept():
    with override_settings(DJANGO_WORKFLOWS={}):
        assert workflow_settings.LOCK_TIMEOUT == 5.0
        with override_settings(DJANGO_WORKFLOWS={"LOCK_TIMEOUT": 1}):
            assert workflow_settings.LOCK_TIMEOUT == 1


def test_an_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="Invalid DJANGO_WORKFLOWS setting: 'LOCK_TIMOUT'"):
        workflow_settings.LOCK_TIMOUT  # noqa: B018


def test_an_unknown_name_has_no_default_through_getattr():
    assert getattr(workflow_settings, "NOPE", "fallback") == "fallback"


@override_settings(DJANGO_WORKFLOWS={"RUNNER": IMMEDIATE})
def test_the_runner_is_imported_from_its_dotted_path():
    assert workflow_settings.RUNNER is immediate.Runner
    assert isinstance(get_runner(), immediate.Runner)


@override_settings(DJANGO_WORKFLOWS={"RUNNER": "tests.services.test_settings.ProjectRunner"})
def test_a_project_runner_is_used():
    assert isinstance(get_runner(), ProjectRunner)


@override_settings(DJANGO_WORKFLOWS={"RUNNER": ProjectRunner})
def test_a_runner_class_may_be_given_directly():
    assert workflow_settings.RUNNER is ProjectRunner


def test_without_django_q_the_default_runner_is_the_immediate_one(monkeypatch):
    from django.apps import apps

    monkeypatch.setattr(apps, "is_installed", lambda name: False)
    with override_settings(DJANGO_WORKFLOWS={}):
        assert workflow_settings.RUNNER is immediate.Runner
