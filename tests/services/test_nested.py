"""Nested workflows through the service: a child row per step, delegation, the parent following.

The ``parent`` workflow: ``intro`` -> ``check`` (auto, nested ``child-check``:
``review`` -> ``decide``) -> ``finish``.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.exceptions import Busy, WorkflowNotMoved
from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.services.sql import statements
from tests import dbutil
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def row_of(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def at_check() -> tuple[WorkflowInstance, WorkflowInstance]:
    """A parent on its nested step, and its child."""
    parent = services.create("parent", start=True)
    services.next(parent)
    return row_of(parent), WorkflowInstance.objects.get(parent=parent.pk)


def types(instance) -> list[str]:
    return list(WorkflowEvent.objects.filter(instance=instance.pk).order_by("sequence")
                .values_list("type", flat=True))


# -- the child row --------------------------------------------------------------------------


def test_entering_the_nested_step_creates_a_child_row():
    parent, child = at_check()

    assert (child.workflow, child.parent_id, child.parent_step) == ("child-check", parent.pk,
                                                                    "check")
    assert (child.status, child.current_step, child.revision) == ("running", "review", 1)
    assert parent.nested_id == str(child.pk)
    assert parent.current_step == "check"


def test_the_child_has_its_own_events_numbered_from_one():
    parent, child = at_check()

    assert list(WorkflowEvent.objects.filter(instance=child).order_by("sequence")
                .values_list("sequence", "type", "revision")) == [
        (1, "start", 1), (2, "step-enter", 1)]
    assert "start" not in types(parent)[1:]


def test_the_child_belongs_to_the_parents_owner():
    owner = UserFactory()
    parent = services.create("parent", owner=owner, start=True)

    services.next(parent)

    assert WorkflowInstance.objects.get(parent=parent.pk).owner == owner


# -- delegation -----------------------------------------------------------------------------


def test_next_on_the_parent_moves_the_child():
    parent, child = at_check()

    services.next(parent)

    assert row_of(child).current_step == "decide"
    assert row_of(parent).current_step == "check"


def test_next_on_the_parent_saves_the_child_with_revision_plus_one():
    parent, child = at_check()

    services.next(parent)

    assert row_of(child).revision == child.revision + 1
    assert types(child)[-2:] == ["step-leave", "step-enter"]


def test_next_that_completes_the_child_moves_the_auto_parent_on():
    parent, child = at_check()
    services.next(parent)

    services.next(parent)

    assert row_of(child).status == "completed"
    row = row_of(parent)
    assert (row.status, row.current_step) == ("running", "finish")
    assert "check" in row.completed_steps


def test_back_on_the_parent_moves_the_child_back_first():
    parent, child = at_check()
    services.next(parent)

    services.back(parent)

    assert row_of(child).current_step == "review"
    assert row_of(parent).current_step == "check"


# -- commands on the child ------------------------------------------------------------------


def test_a_command_on_the_child_moves_the_child():
    parent, child = at_check()

    services.next(child)

    assert row_of(child).current_step == "decide"
    assert row_of(parent).revision == parent.revision


def test_completing_the_child_directly_moves_the_auto_parent_on():
    parent, child = at_check()
    services.next(child)

    services.next(child)

    row = row_of(parent)
    assert (row.current_step, row.revision) == ("finish", parent.revision + 1)
    assert types(row)[-2:] == ["step-leave", "step-enter"]


def test_cancelling_the_child_directly_fails_the_parent_step():
    parent, child = at_check()

    services.cancel(child)

    row = row_of(parent)
    assert (row.status, row.errors) == ("failed",
                                        ['Nested workflow "child-check" was cancelled'])


def test_the_command_on_the_child_returns_the_child():
    _parent, child = at_check()

    result = services.next(child)

    assert (result.pk, result.current_step) == (child.pk, "decide")


def test_a_refusal_of_the_child_changes_neither_row():
    parent, child = at_check()

    with pytest.raises(WorkflowNotMoved) as caught:
        services.back(child)

    assert caught.value.code == "no_previous_step"
    assert (row_of(parent).revision, row_of(child).revision) == (parent.revision, child.revision)


# -- cancel ---------------------------------------------------------------------------------


def test_cancelling_the_parent_cancels_the_child():
    parent, child = at_check()

    services.cancel(parent)

    assert row_of(child).status == "cancelled"
    assert row_of(parent).status == "cancelled"


def test_the_child_is_cancelled_first():
    parent, child = at_check()

    services.cancel(parent)

    cancels = WorkflowEvent.objects.filter(type="cancel").order_by("pk")
    assert [event.instance_id for event in cancels] == [child.pk, parent.pk]


@pytest.fixture
def guarded_child():
    """A parent whose nested child's exit guard refuses."""
    child = Workflow(id="guarded-child", steps=[Step("wait")], exit_guard=lambda ctx: False)
    parent = Workflow(id="guarded-parent", steps=[Step("nest", nested=child)])
    registry.register(parent, origin="tests.services.test_nested")
    yield parent
    registry.unregister(parent.id)
    registry.unregister(child.id)


def test_a_running_childs_exit_guard_refuses_the_parents_cancel(guarded_child):
    parent = services.create("guarded-parent", start=True)
    child = WorkflowInstance.objects.get(parent=parent.pk)

    with pytest.raises(WorkflowNotMoved) as caught:
        services.cancel(parent)

    assert caught.value.code == "cancel_refused"
    assert (row_of(parent).status, row_of(child).status) == ("running", "running")


# -- lock order -----------------------------------------------------------------------------


# That a child's command takes its parent's lock before its own, with real locks:
# tests/services/test_locking.py.


def test_the_locked_chain_runs_from_the_root_down():
    parent, child = at_check()

    with transaction.atomic():
        chain = statements().lock_tree(str(child.pk), 1)

    assert [row.pk for row in chain] == [parent.pk, child.pk]


@pytest.mark.real_locks
@pytest.mark.django_db(transaction=True)
def test_a_command_on_the_child_waits_for_the_parents_lock():
    assert dbutil.has_real_locks()
    parent, child = at_check()
    holding, release = threading.Event(), threading.Event()

    def hold_parent() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk=parent.pk)
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=hold_parent, daemon=True)
    thread.start()
    try:
        assert holding.wait(30)
        with pytest.raises(Busy):
            services.next(child, lock_timeout=0.2)
    finally:
        release.set()
        thread.join(30)

    assert row_of(child).current_step == "review"
    services.next(child)  # once the parent's lock is free
    assert row_of(child).current_step == "decide"


# -- a child let go of is saved as it ended ---------------------------------------------------


def test_rolling_back_the_parent_rolls_back_the_child_then_cancels_it():
    parent, child = at_check()

    services.rollback(parent)

    assert (row_of(parent).status, row_of(parent).nested_id) == ("idle", None)
    child = row_of(child)
    assert child.status == "cancelled"
    assert types(child)[-3:] == ["rollback", "rollback", "cancel"]
    assert WorkflowEvent.objects.filter(instance=child).last().data == {
        "reason": "Rolled back with its parent"}


def test_a_child_replaced_by_another_steps_child_is_saved_cancelled():
    """``back`` leaves the first child running; a path to another nested step replaces it."""
    first = Workflow("first-check", steps=[Step("wait")])
    second = Workflow("second-check", steps=[Step("wait")])
    fork = Workflow("fork", initial={"path": "first"}, steps=[
        Step("choose"), Step("first", nested=first), Step("second", nested=second)],
        transitions=[Transition("choose", "first", when=lambda ctx: ctx.state["path"] == "first"),
                     Transition("choose", "second")])
    for definition in (first, second, fork):
        registry.register(definition)
    try:
        instance = services.create("fork", start=True)
        services.next(instance)  # into "first": its child starts
        left = WorkflowInstance.objects.get(parent=instance.pk, workflow="first-check")
        services.back(instance)  # the child is kept, still running
        services.update_state(instance, {"path": "second"})

        services.next(instance)  # into "second": a child of its own

        assert row_of(left).status == "cancelled"
        assert types(left)[-1] == "cancel"
        assert row_of(instance).nested_id == str(
            WorkflowInstance.objects.get(parent=instance.pk, workflow="second-check").pk)
    finally:
        for definition in (fork, first, second):
            registry.unregister(definition.id)
