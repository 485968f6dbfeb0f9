"""A task's ``merge`` that raises is a hook that raises: the failure is recorded (status
``failed``, the message in ``errors``, event ``error``), not an exception out of the
command, and the task stays open for the person to give their input again."""

from __future__ import annotations

from typing import Any

from django_workflows.engine import Complete, Retry, Task

from .helpers_navigation import kinds, of_instance, raises
from .test_tasks import DECISION, approval, at_approval, task_of

APPROVED = {"decision": "approved"}


def with_merge(merge: Any):
    return at_approval(approval(Task(DECISION, candidates=["group:managers"], merge=merge)))


def test_a_merge_that_raises_fails_the_workflow_with_its_message():
    x, i = with_merge(raises("The ledger is closed"))

    outcome = x.command(i, Complete(input=APPROVED))

    snap = x.snapshot(i)
    assert outcome.moved  # recorded, as any raising hook is: the command did something
    assert (snap.status, snap.errors, snap.current_step) == (
        "failed", ("The ledger is closed",), "approval")
    last = of_instance(x.events, i)[-1]
    assert (last.type, last.step, last.error) == ("error", "approval", "The ledger is closed")


def test_a_merge_that_raises_fails_as_a_raising_validate_does():
    merged = with_merge(raises("boom"))
    validated = at_approval(approval(validate=raises("boom")))

    outcomes = [x.command(i, Complete(input=APPROVED)) for x, i in (merged, validated)]

    assert [o.moved for o in outcomes] == [True, True]
    snaps = [x.snapshot(i) for x, i in (merged, validated)]
    assert [(s.status, s.errors, s.task.status) for s in snaps] == [
        ("failed", ("boom",), "open")] * 2
    assert [kinds(of_instance(x.events, i))[-1] for x, i in (merged, validated)] == [
        "error", "error"]


def test_a_merge_that_raises_keeps_the_task_open_and_the_state_as_it_was():
    x, i = with_merge(raises("boom"))
    before = x.snapshot(i).state

    x.command(i, Complete(input=APPROVED))

    snap = x.snapshot(i)
    assert snap.state == before
    assert (snap.task.status, snap.task.input, snap.task.completed_by) == ("open", None, None)
    assert "task-complete" not in kinds(of_instance(x.events, i))


def test_a_merge_that_raises_a_key_error_names_the_merge():
    x, i = with_merge(lambda state, value: {**state, "total": state["amount"] + 1})

    x.command(i, Complete(input=APPROVED))

    assert x.snapshot(i).errors == (
        """The merge hook of step "approval" raised KeyError 'amount'""",)


def test_after_a_raising_merge_retry_and_the_input_given_again_complete_the_task():
    failures = ["The ledger is closed"]

    def merge_once_failing(state: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
        if failures:
            raise RuntimeError(failures.pop())
        return {**state, "approval": value}

    x, i = with_merge(merge_once_failing)
    x.command(i, Complete(input=APPROVED))

    assert x.command(i, Retry()).moved
    outcome = x.command(i, Complete(input=APPROVED))

    snap = x.snapshot(i)
    assert outcome.moved
    assert (snap.status, snap.current_step, snap.state["approval"]) == (
        "running", "paid", APPROVED)
    assert task_of(x, i).status == "done"
