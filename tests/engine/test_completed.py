"""A completed instance stays completed: validate does not reopen it, nor back a child.

(Back on a completed top-level instance runs it again, as the original does;
a nested child is part of its parent's finished step and does not.)
"""

from __future__ import annotations

from django_workflows.engine import Back, Next, Step, Validate

from .helpers_work import chain, started, types


def finished() -> tuple:
    x, instance = started(chain(Step("a"), Step("b")))
    x.next(instance)
    x.next(instance)
    assert x.snapshot(instance).status == "completed"
    return x, instance


def test_validate_on_a_completed_instance_is_refused_and_changes_nothing():
    x, instance = finished()
    before = x.snapshot(instance)

    outcome = x.validate(instance)

    assert (outcome.moved, outcome.code) == (False, "completed")
    assert x.snapshot(instance) == before


def test_a_completed_instance_cannot_complete_again_through_validate():
    x, instance = finished()

    x.validate(instance)
    x.next(instance)

    assert types(x, instance).count("complete") == 1


def with_completed_child(advance: str = "auto") -> tuple:
    child = chain(Step("c1"), Step("c2"), workflow_id="child")
    parent = chain(Step("before"), Step("nest", nested=child, advance=advance), Step("after"),
                   workflow_id="parent")
    x, instance = started(parent, child)
    x.next(instance)
    child_id = x.snapshot(instance).nested.id
    x.command(child_id, Next())
    x.command(child_id, Next())
    assert x.snapshot(child_id).status == "completed"
    return x, instance, child_id


def test_back_given_to_a_completed_child_is_refused():
    x, instance, child_id = with_completed_child()
    assert x.snapshot(instance).current_step == "after"
    before = x.snapshot(instance)

    outcome = x.command(child_id, Back())

    assert (outcome.moved, outcome.code) == (False, "completed")
    assert x.snapshot(instance) == before
    assert types(x, child_id).count("complete") == 1


def test_a_completed_child_under_a_manual_step_is_not_reopened_either():
    x, instance, child_id = with_completed_child(advance="manual")
    assert x.snapshot(instance).current_step == "nest"

    assert x.command(child_id, Back()).code == "completed"
    assert x.command(child_id, Validate()).code == "completed"
    assert x.snapshot(child_id).status == "completed"
    x.next(instance)
    assert x.snapshot(instance).current_step == "after"
