"""Workflow(reopen_completed=...): whether back reopens a completed instance, and what a
person confirms first."""

from __future__ import annotations

import pytest

from django_workflows.engine import DefinitionError, Start, Workflow, applies, verdict

from .helpers_navigation import started, wizard


def completed(**workflow) -> tuple:
    x, instance = started(wizard("order", "ship", **workflow))
    x.next(instance)
    x.next(instance)
    assert x.snapshot(instance).status == "completed"
    return x, instance


def test_back_reopens_a_completed_instance_by_default_as_the_original_runner_does():
    x, instance = completed()

    assert x.back(instance).moved
    assert x.snapshot(instance).status == "running"


def test_back_asks_to_confirm_before_it_reopens_a_completed_instance():
    x, instance = completed()

    found = applies(x.definitions["w"], x.snapshot(instance), x.env())["back"]

    assert (found.allowed, found.confirm) == (
        True, 'Workflow "w" is completed: going back reopens it')


def test_back_of_a_running_instance_asks_nothing():
    x, instance = started(wizard("order", "ship"))
    x.next(instance)

    found = applies(x.definitions["w"], x.snapshot(instance), x.env())["back"]

    assert (found.allowed, found.confirm) == (True, None)


def test_back_from_completed_is_refused_when_the_workflow_does_not_reopen():
    x, instance = completed(reopen_completed=False)

    outcome = x.back(instance)

    assert (outcome.moved, outcome.code) == (False, "reopen_forbidden")
    assert outcome.message == ('Workflow "w" is completed and does not reopen '
                               "(reopen_completed=False)")
    assert x.snapshot(instance).status == "completed"


def test_reopen_completed_false_leaves_back_on_a_running_instance_alone():
    x, instance = started(wizard("order", "ship", reopen_completed=False))
    x.next(instance)

    assert x.back(instance).moved


def test_reopen_completed_must_be_a_bool():
    with pytest.raises(DefinitionError, match="reopen_completed must be True or False"):
        Workflow("w", reopen_completed="no")  # type: ignore[arg-type]


def test_start_of_a_rolled_back_instance_asks_to_confirm():
    x, instance = started(wizard("order", "ship"))
    x.next(instance)
    x.rollback(instance)
    assert x.snapshot(instance).status == "idle"

    found = verdict(x.definitions["w"], x.snapshot(instance), x.env(), Start())

    assert found.allowed
    assert found.confirm == ('Workflow "w" was rolled back: starting it runs its steps and '
                             "their work again")


def test_start_of_a_new_instance_asks_nothing():
    x = started(wizard("order"))[0]
    fresh = x.create("w")

    assert verdict(x.definitions["w"], x.snapshot(fresh), x.env(), Start()).confirm is None
