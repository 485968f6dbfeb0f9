"""retry: a failed or blocked step runs again, keeping the work that succeeded."""

from __future__ import annotations

from django_workflows.engine import Operation, Step

from .helpers_navigation import Calls, chain, created, kinds, raises, started, trail, wizard


def fails_first(message: str = "service unavailable"):
    """A hook (or run) that raises on its first call only; it counts its calls."""
    calls = []

    def hook(*args):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(message)
        return "ok"

    hook.calls = calls
    return hook


def test_retry_runs_a_failed_step_again():
    enter = fails_first("directory is down")
    x, instance = started(chain(Step("account", enter=enter), Step("plan")))

    outcome = x.retry(instance)

    assert outcome.moved
    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "account")
    assert snapshot.errors == ()


def test_retry_runs_the_enter_hook_again():
    enter = fails_first()
    x, instance = started(chain(Step("account", enter=enter), Step("plan")))

    x.retry(instance)

    assert len(enter.calls) == 2


def test_retry_emits_retry_with_the_current_step():
    x, instance = started(chain(Step("account", enter=fails_first()), Step("plan")))

    outcome = x.retry(instance)

    assert trail(outcome.events) == [("retry", "account")]


def test_retry_does_not_enter_the_step_a_second_time():
    x, instance = started(chain(Step("account", enter=fails_first()), Step("plan")))

    x.retry(instance)

    assert x.snapshot(instance).history == ("account",)


def test_a_retry_that_fails_again_leaves_the_workflow_failed():
    x, instance = started(chain(Step("account", enter=raises("directory is down"))))

    outcome = x.retry(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("failed", ("directory is down",))
    assert kinds(outcome.events) == ["retry", "error"]


def test_retry_keeps_the_operations_that_succeeded():
    create = Calls()
    invite = fails_first("mail server is down")
    definition = chain(Step("provision", operations=[
        Operation("create-tenant", run=create.hook("create")),
        Operation("invite-owner", run=invite)]), Step("welcome"))
    x, instance = started(definition)
    assert x.snapshot(instance).errors == ("mail server is down",)

    x.retry(instance)

    assert create.count("create") == 1
    assert len(invite.calls) == 2
    snapshot = x.snapshot(instance)
    assert snapshot.status == "running"
    assert [op.status for op in snapshot.operations] == ["succeeded", "succeeded"]


def test_a_retried_auto_step_moves_on_once_its_work_succeeded():
    definition = chain(Step("provision", advance="auto", operations=[
        Operation("create-tenant", run=fails_first())]), Step("welcome"))
    x, instance = started(definition)
    assert x.snapshot(instance).status == "failed"

    x.retry(instance)

    assert x.snapshot(instance).current_step == "welcome"


def test_retry_runs_a_blocked_operation_again():
    runs = []

    def charge(ctx):
        runs.append(1)
        if len(runs) == 1:
            ctx.block("Card declined")
        return "charged"

    x, instance = started(chain(Step("pay", operations=[Operation("charge", run=charge)]),
                                Step("done")))
    assert x.snapshot(instance).status == "blocked"

    x.retry(instance)

    snapshot = x.snapshot(instance)
    assert len(runs) == 2
    assert (snapshot.status, snapshot.errors) == ("running", ())
    assert snapshot.operation("charge").status == "succeeded"


def test_retry_of_a_step_blocked_by_validation_makes_it_running():
    calls = Calls()
    x, instance = started(chain(Step("account", enter=calls.hook("enter"),
                                     validate=lambda ctx: "Email is required"), Step("plan")))
    x.next(instance)

    x.retry(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.errors) == ("running", ())
    assert calls.log == ["enter", "enter"]


def test_retry_of_a_workflow_that_failed_before_its_first_step_enters_it():
    x, instance = started(chain(Step("account", when=fails_first()), Step("plan")))
    assert x.snapshot(instance).current_step is None

    x.retry(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step) == ("running", "account")


def test_retry_of_a_running_workflow_is_refused():
    x, instance = started(wizard("account"))

    outcome = x.retry(instance)

    assert (outcome.moved, outcome.code) == (False, "not_failed")
    assert outcome.events == ()


def test_retry_before_start_is_refused():
    x, instance = created(wizard("account"))

    outcome = x.retry(instance)

    assert outcome.code == "not_failed"
    assert x.snapshot(instance).status == "idle"


def test_retry_of_a_completed_workflow_is_refused():
    x, instance = started(wizard("account"))
    x.next(instance)

    outcome = x.retry(instance)

    assert outcome.code == "not_failed"
    assert x.snapshot(instance).status == "completed"


def test_retry_after_a_cancel_answers_cancelled():
    x, instance = started(chain(Step("account", enter=raises("boom"))))
    x.cancel(instance)

    outcome = x.retry(instance)

    assert (outcome.moved, outcome.code) == (False, "cancelled")


def timed_out_attempt() -> tuple:
    """A workflow failed by an attempt that timed out and has not stopped yet."""
    definition = chain(Step("provision", operations=[
        Operation("create-tenant", run=lambda ctx: "tenant-1", timeout=5)]), Step("welcome"))
    x, instance = started(definition, autorun=False)
    token = x.claim()
    x.advance(5)
    assert x.snapshot(instance).status == "failed"
    return x, instance, token


def test_retry_is_refused_while_a_timed_out_attempt_is_still_stopping():
    x, instance, _ = timed_out_attempt()

    outcome = x.retry(instance)

    assert (outcome.moved, outcome.code) == (False, "still_stopping")
    assert outcome.message.endswith("cannot retry while a timed-out step is still stopping")
    assert x.snapshot(instance).status == "failed"


def test_retry_is_allowed_once_the_timed_out_attempt_stopped():
    x, instance, token = timed_out_attempt()
    x.finish(token)

    outcome = x.retry(instance)

    assert outcome.moved
    assert x.snapshot(instance).status == "running"
    assert x.snapshot(instance).operation("create-tenant").status == "queued"
