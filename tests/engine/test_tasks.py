"""Tasks in the engine: a step that waits for a person's input (DESIGN.md §7)."""

from __future__ import annotations

import pydantic
import pytest

from django_workflows.engine import (
    Claim,
    Complete,
    DefinitionError,
    Release,
    Step,
    Task,
    Transition,
    Workflow,
)

from .helpers_navigation import kinds, of_instance, started

DECISION = {"type": "object", "required": ["decision"], "additionalProperties": False,
            "properties": {"decision": {"enum": ["approved", "rejected"]},
                           "comment": {"type": "string", "maxLength": 200}}}


def approval(task: Task | None = None, **step) -> Workflow:
    return Workflow("claim", steps=[
        Step("claim"), Step("approval", task=task or Task(DECISION, candidates=["group:managers"]),
                            **step),
        Step("paid"), Step("rejected")],
        transitions=[Transition("claim", "approval"),
                     Transition("approval", "paid",
                                when=lambda ctx: ctx.state["approval"]["decision"] == "approved"),
                     Transition("approval", "rejected")])


def at_approval(definition: Workflow | None = None, **executor):
    x, i = started(definition or approval(), actor="mo", **executor)
    x.next(i)
    return x, i


def task_of(x, i):
    return x.snapshot(i).task


def test_entering_the_step_opens_its_task():
    x, i = at_approval()

    task = task_of(x, i)
    assert (task.status, task.step, task.title, task.candidates) == (
        "open", "approval", "approval", ("group:managers",))
    assert kinds(of_instance(x.events, i))[-2:] == ["step-enter", "task-open"]


def test_next_is_refused_while_the_task_is_open():
    x, i = at_approval()

    outcome = x.next(i)

    assert (outcome.moved, outcome.code) == (False, "task_open")
    assert 'waits for its task "approval"' in outcome.message


def test_complete_checks_merges_records_and_moves_on_in_one_command():
    x, i = at_approval()
    before = len(x.events)

    outcome = x.command(i, Complete(input={"decision": "approved"}))

    assert outcome.moved
    snap = x.snapshot(i)
    assert snap.state["approval"] == {"decision": "approved"}
    assert (snap.task.status, snap.task.completed_by, snap.task.input) == (
        "done", "mo", {"decision": "approved"})
    assert snap.current_step == "paid"
    assert kinds(x.events[before:]) == ["task-complete", "validate", "step-leave", "step-enter"]


def test_input_that_breaks_the_form_is_refused_naming_each_field_and_changes_nothing():
    x, i = at_approval()
    before = x.snapshot(i)

    outcome = x.command(i, Complete(input={"decision": "maybe", "comment": 3}))

    assert (outcome.moved, outcome.code) == (False, "invalid_input")
    assert {e.field for e in outcome.field_errors} == {"decision", "comment"}
    assert x.snapshot(i) == before


def test_an_input_that_the_step_does_not_validate_is_refused_and_changes_nothing():
    x, i = at_approval(approval(validate=lambda ctx: None if ctx.state.get("approval", {}).get(
        "comment") else "comment: Say why"))
    before = x.snapshot(i)

    outcome = x.command(i, Complete(input={"decision": "rejected"}))

    assert (outcome.code, outcome.message) == ("validation_failed", "comment: Say why")
    assert x.snapshot(i) == before


def test_the_input_goes_under_the_tasks_key_or_through_its_merge():
    keyed = at_approval(approval(Task(DECISION, key="manager")))
    keyed[0].command(keyed[1], Complete(input={"decision": "approved"}))
    merged = at_approval(approval(Task(DECISION, merge=lambda state, value: {
        **state, "approval": value, "approved": value["decision"] == "approved"})))
    merged[0].command(merged[1], Complete(input={"decision": "approved"}))

    assert task_of(*keyed).status == "done"
    assert keyed[0].snapshot(keyed[1]).state["manager"] == {"decision": "approved"}
    assert merged[0].snapshot(merged[1]).state["approved"] is True


def test_a_claimed_task_is_completed_by_its_claimer_only():
    x, i = at_approval()
    x.command(i, Claim())
    x.actor = "ann"

    refused = x.command(i, Complete(input={"decision": "approved"}))
    claimed_again = x.command(i, Claim())

    assert (refused.code, claimed_again.code) == ("task_claimed", "task_claimed")
    assert task_of(x, i).claimed_by == "mo"


def test_release_gives_the_task_back():
    x, i = at_approval()
    x.command(i, Claim())

    x.command(i, Release())

    assert task_of(x, i).claimed_by is None
    assert x.command(i, Release()).code == "not_claimed"
    assert kinds(of_instance(x.events, i))[-2:] == ["task-claim", "task-release"]


def test_claiming_twice_is_refused_already_claimed():
    x, i = at_approval()
    x.command(i, Claim())

    assert x.command(i, Claim()).code == "already_claimed"


def test_leaving_the_step_by_back_cancels_its_task_and_coming_back_opens_a_new_one():
    x, i = at_approval()
    first = task_of(x, i)

    x.back(i)
    assert (task_of(x, i).id, task_of(x, i).status) == (first.id, "cancelled")
    x.next(i)

    assert task_of(x, i).id != first.id and task_of(x, i).status == "open"


@pytest.mark.parametrize("command", ["skip", "cancel", "rollback"])
def test_skip_cancel_and_rollback_cancel_the_open_task(command):
    x, i = at_approval()
    task_id = task_of(x, i).id

    getattr(x, command)(i)
    x.run_pending()

    events = [e for e in of_instance(x.events, i) if e.type == "task-cancel"]
    assert [e.data["task"] for e in events] == [task_id]


def test_a_task_past_due_is_overdue_and_its_escalation_joins_the_candidates():
    x, i = at_approval(approval(Task(DECISION, candidates=["group:managers"], due=3600,
                                     escalate_to=["group:directors"])))

    x.advance(3601)

    task = task_of(x, i)
    assert task.overdue
    assert task.candidates == ("group:managers", "group:directors")
    assert "task-overdue" in kinds(of_instance(x.events, i))


def test_a_task_completed_in_time_never_becomes_overdue():
    x, i = at_approval(approval(Task(DECISION, due=3600)))
    x.command(i, Complete(input={"decision": "approved"}))

    x.advance(7200)

    assert not task_of(x, i).overdue


def test_candidates_may_come_from_the_state_when_the_task_opens():
    x, i = at_approval(approval(Task(DECISION, candidates=lambda ctx: [
        f"user:{ctx.state.get('manager', 'mo')}"])))

    assert task_of(x, i).candidates == ("user:mo",)


def test_candidates_that_are_no_candidates_fail_the_step_naming_it():
    x, i = at_approval(approval(Task(DECISION, candidates=lambda ctx: ["managers"])))

    snap = x.snapshot(i)
    assert snap.status == "failed"
    assert 'Step "approval": task candidates' in snap.errors[0]


def test_a_stale_task_id_is_refused():
    x, i = at_approval()
    old = task_of(x, i).id
    x.back(i)
    x.next(i)

    assert x.command(i, Complete(task=old, input={"decision": "approved"})).code == "task_closed"


def test_an_auto_step_with_a_task_waits_for_it_and_then_moves_on():
    x, i = at_approval(approval(advance="auto"))

    assert x.snapshot(i).current_step == "approval"
    x.command(i, Complete(input={"decision": "rejected"}))

    assert x.snapshot(i).current_step == "rejected"


def test_a_pydantic_model_is_a_form_too():
    class Decision(pydantic.BaseModel):
        decision: str
        amount: int = 0

    x, i = at_approval(approval(Task(Decision)))

    assert x.command(i, Complete(input={"amount": "lots"})).code == "invalid_input"
    assert x.command(i, Complete(input={"decision": "approved", "amount": 3})).moved


@pytest.mark.parametrize(("task", "message"), [
    (dict(form={"type": "nonsense"}), 'Step "approval": task: form is not a valid JSON Schema'),
    (dict(form=DECISION, candidates=["managers"]), 'Step "approval": task candidates'),
    (dict(form=DECISION, candidates=["perm:approve"]), "perm:<app_label>.<codename>"),
    (dict(form=None), "needs a form"),
])
def test_a_broken_task_fails_at_definition_naming_its_step(task, message):
    with pytest.raises(DefinitionError, match=message):
        Step("approval", task=Task(**task))
