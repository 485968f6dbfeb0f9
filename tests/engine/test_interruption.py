"""Interrupted work: a worker whose heartbeat expired, and recovering with retry."""

from __future__ import annotations

from django_workflows.engine import AttemptInterrupted, Branch, Operation, Step, Workflow

from .helpers_work import Calls, branch_statuses, chain, one_operation, op, pending_token, started

OPERATION_INTERRUPTED = "Operation was interrupted before workflow recovery"
BRANCH_INTERRUPTED = "Parallel branch was interrupted before workflow recovery"
WORKFLOW_INTERRUPTED = "Workflow work was interrupted and must be retried"


def test_an_interrupted_operation_fails_with_operation_interrupted_error():
    x, i = started(one_operation(Operation("op", run=lambda c: 1)), autorun=False)

    x.interrupt(x.claim())

    operation = op(x, i, "op")
    assert operation.status == "failed"
    assert (operation.error.name, operation.error.message) == (
        "OperationInterruptedError", OPERATION_INTERRUPTED)
    assert operation.completed_at == x.clock.now()


def test_interrupted_work_fails_the_workflow_and_asks_for_a_retry():
    x, i = started(one_operation(Operation("op", run=lambda c: 1)), autorun=False)

    x.interrupt(x.claim())

    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (WORKFLOW_INTERRUPTED,)


def test_the_interrupted_message_is_added_to_the_errors_already_there():
    wf = Workflow("wf", steps=[Step("work", validate=lambda ctx: "Fill in the form",
                                    operations=[Operation("op", run=lambda c: 1)])])
    x, i = started(wf, autorun=False)
    token = x.claim()
    x.validate(i)
    assert x.snapshot(i).errors == ("Fill in the form",)

    x.interrupt(token)

    assert x.snapshot(i).errors == ("Fill in the form", WORKFLOW_INTERRUPTED)


def test_an_interruption_emits_resume_then_error():
    x, i = started(one_operation(Operation("op", run=lambda c: 1)), autorun=False)

    x.interrupt(x.claim())

    workflow_events = [(e.type, e.step, e.error) for e in x.events_of(i)
                       if not e.type.startswith("operation-")]
    assert workflow_events == [("start", None, None), ("step-enter", "work", None),
                               ("resume", "work", None),
                               ("error", "work", WORKFLOW_INTERRUPTED)]


def test_an_interrupted_operation_is_not_retried_on_its_own():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=calls.run("op"), retries=3)),
                   autorun=False)

    x.interrupt(x.claim())

    assert x.pending == []
    assert calls == []
    assert op(x, i, "op").attempt == 1


def test_an_interrupt_with_a_stale_token_is_refused_and_changes_nothing():
    x, i = started(one_operation(Operation("op", run=lambda c: 1)))
    before = x.snapshot(i)

    outcome = x.command(i, AttemptInterrupted("gone"))

    assert (outcome.moved, outcome.code) == (False, "stale_attempt")
    assert x.snapshot(i) == before


def test_an_interrupted_branch_fails_with_parallel_branch_interrupted():
    wf = Workflow("wf", steps=[Step("work", parallel=[Branch("mail", run=lambda c: None)])])
    x, i = started(wf, autorun=False)

    outcome = x.interrupt(x.claim())

    mail = x.snapshot(i).branch("work", "mail")
    assert (mail.status, mail.error) == ("failed", BRANCH_INTERRUPTED)
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (WORKFLOW_INTERRUPTED,)
    assert [e.type for e in outcome.events] == ["resume", "error"]


def test_retry_after_an_interrupted_operation_completes_without_rerunning_succeeded_work():
    calls = Calls()
    wf = chain(Step("work", advance="auto", operations=[
        Operation("first", run=calls.run("first")),
        Operation("second", run=calls.run("second")),
    ]), Step("done"))
    x, i = started(wf, autorun=False)
    x.finish(x.claim())  # first succeeds
    x.interrupt(x.claim())  # second's worker dies

    outcome = x.retry(i)
    x.run_pending()

    assert outcome.moved
    assert calls == ["first", "second"]
    assert op(x, i, "second").status == "succeeded"
    assert x.snapshot(i).current_step == "done"
    assert x.snapshot(i).errors == ()


def test_retry_after_an_interrupted_branch_reruns_only_that_branch():
    calls = Calls()
    wf = chain(Step("work", advance="auto", parallel=[
        Branch("mail", run=calls.hook("mail")), Branch("crm", run=calls.hook("crm"))]),
        Step("done"))
    x, i = started(wf, autorun=False)
    x.finish(x.claim(pending_token(x, "work:mail")))
    x.interrupt(x.claim(pending_token(x, "work:crm")))

    x.retry(i)
    x.run_pending()

    assert calls == ["mail", "crm"]
    assert x.snapshot(i).current_step == "done"


def test_a_branch_still_running_when_another_was_interrupted_is_waited_for_after_retry():
    calls = Calls()
    wf = chain(Step("work", advance="auto", parallel=[
        Branch("mail", run=calls.hook("mail")), Branch("crm", run=calls.hook("crm"))]),
        Step("done"))
    x, i = started(wf, autorun=False)
    mail = x.claim(pending_token(x, "work:mail"))
    x.interrupt(x.claim(pending_token(x, "work:crm")))

    x.retry(i)
    assert branch_statuses(x, i) == {"mail": "running", "crm": "running"}
    x.finish(mail)
    assert x.snapshot(i).current_step == "work"
    x.run_pending()

    assert sorted(calls) == ["crm", "mail"]
    assert x.snapshot(i).current_step == "done"


def test_an_interrupted_operation_of_a_nested_child_fails_the_parent_step():
    child = Workflow("child", steps=[Step("only", operations=[Operation("op", run=lambda c: 1)])])
    x, i = started(Workflow("parent", steps=[Step("nest", nested=child)]), autorun=False)
    child_id = x.snapshot(i).nested.id

    x.interrupt(x.claim())

    assert x.snapshot(child_id).status == "failed"
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (WORKFLOW_INTERRUPTED,)
