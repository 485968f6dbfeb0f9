"""Nested workflows: a child instance per step, delegation, and the parent following it."""

from __future__ import annotations

from django_workflows.engine import Next, Operation, Step, Transition, Workflow
from django_workflows.testing.local import LocalExecutor

from .helpers_work import Calls, chain, fails_calls, started, types


def child_workflow(workflow_id: str = "child", **step_options) -> Workflow:
    return chain(Step("c1", **step_options), Step("c2"), workflow_id=workflow_id)


def parent_workflow(child: Workflow | str, *, advance: str = "manual") -> Workflow:
    return chain(Step("before"), Step("nest", nested=child, advance=advance), Step("after"),
                 workflow_id="parent")


def at_nested_step(child: Workflow | str | None = None, *others: Workflow,
                   advance: str = "manual", autorun: bool = True
                   ) -> tuple[LocalExecutor, str, str]:
    """A parent instance on its nested step; returns (executor, parent id, child id)."""
    child = child if child is not None else child_workflow()
    x, i = started(parent_workflow(child, advance=advance), *others, autorun=autorun)
    x.next(i)
    return x, i, x.snapshot(i).nested.id


def test_entering_a_nested_step_starts_a_child_instance():
    x, i, child = at_nested_step()

    nested = x.snapshot(i).nested
    assert (nested.workflow, nested.parent_id, nested.parent_step) == ("child", i, "nest")
    assert (nested.status, nested.current_step) == ("running", "c1")
    assert child != i
    assert types(x, child) == ["start", "step-enter"]


def test_the_child_is_not_started_before_its_step_is_entered():
    x, i = started(parent_workflow(child_workflow()))

    assert x.snapshot(i).nested is None


def test_the_childs_events_are_its_own():
    x, i, child = at_nested_step()

    assert [e.step for e in x.events_of(i) if e.type == "step-enter"] == ["before", "nest"]
    assert [e.step for e in x.events_of(child) if e.type == "step-enter"] == ["c1"]


def test_next_goes_to_the_child_while_it_has_not_completed():
    x, i, child = at_nested_step()

    outcome = x.next(i)

    assert outcome.moved
    assert x.snapshot(i).current_step == "nest"
    assert x.snapshot(child).current_step == "c2"


def test_the_parent_moves_on_in_the_same_next_that_completes_the_child():
    x, i, child = at_nested_step()
    x.next(i)

    x.next(i)

    assert x.snapshot(child).status == "completed"
    assert x.snapshot(i).current_step == "after"
    assert x.snapshot(i).completed_steps == ("before", "nest")


def test_a_next_the_child_refuses_is_refused_for_the_parent():
    child = child_workflow(validate=lambda ctx: "Pick a plan")
    x, i, child_id = at_nested_step(child)

    outcome = x.next(i)

    assert (outcome.moved, outcome.code) == (False, "validation_failed")
    assert x.snapshot(child_id).status == "blocked"
    assert x.snapshot(child_id).errors == ("Pick a plan",)
    assert x.snapshot(i).current_step == "nest"


def test_back_goes_to_the_child_first():
    x, i, child = at_nested_step()
    x.next(i)

    outcome = x.back(i)

    assert outcome.moved
    assert x.snapshot(child).current_step == "c1"
    assert x.snapshot(i).current_step == "nest"


def test_back_leaves_the_nested_step_when_the_child_cannot_go_back():
    x, i, child = at_nested_step()

    outcome = x.back(i)

    assert outcome.moved
    assert x.snapshot(i).current_step == "before"
    assert x.snapshot(child).current_step == "c1"


def test_a_command_given_to_the_child_lets_an_auto_parent_step_move_on():
    x, i, child = at_nested_step(advance="auto")
    x.command(child, Next())

    outcome = x.command(child, Next())

    assert outcome.moved
    assert x.snapshot(child).status == "completed"
    assert x.snapshot(i).current_step == "after"
    assert x.snapshot(i).completed_steps == ("before", "nest")


def test_a_child_completed_by_its_own_command_leaves_a_manual_parent_step_waiting_for_next():
    x, i, child = at_nested_step()
    x.command(child, Next())
    x.command(child, Next())
    assert x.snapshot(i).current_step == "nest"

    x.next(i)

    assert x.snapshot(i).current_step == "after"


def test_an_auto_nested_step_whose_child_completes_at_once_moves_on():
    calls = Calls()
    child = Workflow("child", steps=[Step("only", advance="auto",
                                          operations=[Operation("op", run=calls.run("op"))])])

    x, i, _ = at_nested_step(child, advance="auto")

    assert calls == ["op"]
    assert x.snapshot(i).nested.status == "completed"
    assert x.snapshot(i).current_step == "after"


def test_work_of_the_child_runs_under_the_childs_id():
    child = Workflow("child", steps=[Step("only", operations=[Operation("op", run=lambda c: 1)])])

    x, i, child_id = at_nested_step(child, autorun=False)

    assert [(p.instance_id, p.target) for p in x.pending] == [(child_id, "op")]
    assert x.snapshot(i).operations == ()


def test_a_failed_child_fails_the_parent_step():
    child = Workflow("child", steps=[Step("only", operations=[
        Operation("op", run=Calls().failing("op", "card declined"))])])

    x, i, child_id = at_nested_step(child)

    assert x.snapshot(child_id).status == "failed"
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == ("card declined",)
    assert [(e.step, e.error) for e in x.events_of(i) if e.type == "error"] == [
        ("nest", "card declined")]


def test_a_child_that_fails_later_fails_the_parent_step():
    child = Workflow("child", steps=[Step("only", operations=[
        Operation("op", run=Calls().failing("op", "card declined"))])])
    x, i, child_id = at_nested_step(child, autorun=False)
    assert x.snapshot(i).status == "running"
    assert x.snapshot(child_id).status == "running"

    x.run_pending()

    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == ("card declined",)


def test_a_child_cancelled_on_its_own_fails_the_parent_step():
    x, i, child = at_nested_step()

    x.cancel(child)

    assert x.snapshot(child).status == "cancelled"
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == ('Nested workflow "child" was cancelled',)


def test_retry_of_the_parent_retries_its_failed_child_without_restarting_it():
    calls = []
    child = Workflow("child", steps=[Step("only", advance="auto", operations=[
        Operation("op", run=fails_calls(1, "ok", calls))])])
    x, i, child_id = at_nested_step(child, advance="auto")
    assert x.snapshot(i).status == "failed"

    outcome = x.retry(i)

    assert outcome.moved
    assert x.snapshot(i).nested.id == child_id
    assert types(x, child_id).count("start") == 1
    assert types(x, child_id).count("retry") == 1
    assert x.snapshot(child_id).status == "completed"
    assert x.snapshot(i).current_step == "after"


def test_cancel_cancels_the_child_first():
    x, i, child = at_nested_step()

    outcome = x.cancel(i)

    assert [(e.type, e.instance_id) for e in outcome.events] == [
        ("cancel", child), ("cancel", i)]
    assert x.snapshot(child).status == "cancelled"
    assert x.snapshot(i).status == "cancelled"


def test_cancel_stops_the_childs_running_work():
    child = Workflow("child", steps=[Step("only", operations=[Operation("op", run=lambda c: 1)])])
    x, i, child_id = at_nested_step(child, autorun=False)
    token = x.claim()

    x.cancel(i)

    assert x.live[token].stop_reason == "Cancelled"
    assert x.snapshot(child_id).operation("op").status == "cancelled"


def test_a_later_nested_step_starts_its_own_child():
    first = child_workflow("first-child")
    second = child_workflow("second-child")
    wf = chain(Step("one", nested=first), Step("two", nested=second), workflow_id="parent")
    x, i = started(wf)
    first_id = x.snapshot(i).nested.id
    for _ in range(3):
        x.next(i)

    nested = x.snapshot(i).nested
    assert x.snapshot(i).current_step == "two"
    assert (nested.workflow, nested.parent_step, nested.status) == (
        "second-child", "two", "running")
    assert nested.id != first_id


def test_a_nested_step_reentered_after_back_keeps_its_child():
    x, i, child = at_nested_step()
    x.back(i)

    x.next(i)

    assert x.snapshot(i).current_step == "nest"
    assert x.snapshot(i).nested.id == child
    assert types(x, child).count("start") == 1


def test_nested_given_by_id_is_resolved_through_the_executors_definitions():
    child = child_workflow("billing")

    x, i, child_id = at_nested_step("billing", child)

    assert x.snapshot(i).nested.workflow == "billing"
    x.next(i)
    x.next(i)
    assert x.snapshot(child_id).status == "completed"
    assert x.snapshot(i).current_step == "after"


def test_skipping_a_nested_step_cancels_its_unfinished_child():
    x, i, child = at_nested_step()

    x.skip(i)

    assert x.snapshot(i).current_step == "after"
    assert x.snapshot(i).nested.status == "cancelled"
    assert types(x, child)[-1] == "cancel"


def branching_parent(*, then: Step) -> Workflow:
    """From "start": to "nest" (a nested child) unless the state says ``shortcut``."""
    return Workflow("parent", steps=[Step("start"), Step("nest", nested=child_workflow()),
                                     then],
                    transitions=[Transition("start", then.id,
                                            when=lambda ctx: ctx.state.get("shortcut")),
                                 Transition("start", "nest"), Transition("nest", then.id)])


def test_back_keeps_the_child_of_the_step_it_leaves():
    x, i = started(branching_parent(then=Step("end")))
    x.next(i)
    child = x.snapshot(i).nested.id

    x.back(i)

    assert x.snapshot(i).current_step == "start"
    assert x.snapshot(child).status == "running"


def test_a_later_nested_step_cancels_a_child_left_running_by_back():
    other = child_workflow("other-child")
    x, i = started(branching_parent(then=Step("elsewhere", nested=other)), other)
    x.next(i)
    first = x.snapshot(i).nested.id
    x.back(i)
    x.update_state(i, {"shortcut": True})

    x.next(i)  # start -> elsewhere, which starts its own child

    assert x.snapshot(i).current_step == "elsewhere"
    assert x.snapshot(i).nested.workflow == "other-child"
    assert types(x, first)[-1] == "cancel"


def test_a_parent_completing_cancels_a_child_left_running_by_back():
    x, i = started(branching_parent(then=Step("end")))
    x.next(i)
    child = x.snapshot(i).nested.id
    x.back(i)
    x.update_state(i, {"shortcut": True})
    x.next(i)  # start -> end

    x.next(i)  # end completes the parent

    assert x.snapshot(i).status == "completed"
    assert types(x, child)[-1] == "cancel"


def test_a_child_whose_initial_state_breaks_its_schema_fails_the_parent_step():
    child = Workflow("strict-child", steps=[Step("c1")], initial={"age": -1},
                     state_schema={"type": "object",
                                   "properties": {"age": {"type": "integer", "minimum": 0}}})
    x, i = started(parent_workflow(child))

    outcome = x.next(i)

    snap = x.snapshot(i)
    assert (snap.status, snap.current_step, snap.nested) == ("failed", "nest", None)
    assert outcome.error == snap.errors[0]
    assert snap.errors[0].startswith('Nested workflow "strict-child" cannot start: age: ')
