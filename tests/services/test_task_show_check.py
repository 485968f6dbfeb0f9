"""A task's ``show`` that is neither a list of state keys nor a callable fails at startup,
with the system check naming the step and the module."""

from __future__ import annotations

import pytest

from django_workflows import checks, registry


@pytest.fixture(autouse=True)
def restore_registry():
    """Put the registry back as the app's start-up left it."""
    definitions, errors = dict(registry._definitions), list(registry.discovery_errors)
    yield
    for workflow_id in [key for key in registry._definitions if key not in definitions]:
        registry.unregister(workflow_id)
    registry.discovery_errors[:] = errors


def test_e005_a_task_show_that_is_one_string_names_its_step():
    registry.autodiscover("broken.bad_show")

    (problem,) = [p for p in checks.check_definitions() if p.id == "django_workflows.E005"]

    assert problem.msg == ('Step "approval": task show must be a list of state keys ("amount", '
                           '"receipt.url") or a callable of the context returning label/value '
                           "pairs, not 'amount'")
    assert problem.hint == "in tests.testapp.broken.bad_show"
