"""Parallel branches: dispatched together, joined, failures, retry, bare callables."""

from __future__ import annotations

from django_workflows.engine import Branch, Operation, Step, Workflow

from .helpers_work import Calls, branch_statuses, chain, op, pending_token, started, types

FAILED = 'Parallel workflow step "work" failed'


def two_branches(calls: Calls, *, advance: str = "auto", fail: tuple[str, ...] = ()) -> Workflow:
    def branch(name: str) -> Branch:
        run = calls.failing(name, f"{name} broke") if name in fail else calls.hook(name)
        return Branch(name, run=run)

    return chain(Step("work", advance=advance, parallel=[branch("mail"), branch("crm")]),
                 Step("done"))


def test_branches_are_dispatched_together():
    x, i = started(two_branches(Calls()), autorun=False)

    assert sorted(p.target for p in x.pending) == ["work:crm", "work:mail"]
    assert branch_statuses(x, i) == {"mail": "running", "crm": "running"}


def test_every_branch_runs():
    calls = Calls()
    started(two_branches(calls))

    assert sorted(calls) == ["crm", "mail"]


def test_an_auto_parallel_step_waits_for_every_branch_before_moving_on():
    x, i = started(two_branches(Calls()), autorun=False)
    x.finish(x.claim(pending_token(x, "work:mail")))
    assert x.snapshot(i).current_step == "work"
    assert branch_statuses(x, i) == {"mail": "succeeded", "crm": "running"}

    x.finish(x.claim(pending_token(x, "work:crm")))

    assert x.snapshot(i).current_step == "done"
    assert x.snapshot(i).completed_steps == ("work",)


def test_next_is_refused_until_every_branch_succeeded():
    x, i = started(two_branches(Calls(), advance="manual"), autorun=False)
    x.finish(x.claim(pending_token(x, "work:mail")))

    refused = x.next(i)
    x.finish(x.claim(pending_token(x, "work:crm")))
    accepted = x.next(i)

    assert (refused.moved, refused.code) == (False, "work_in_progress")
    assert accepted.moved
    assert x.snapshot(i).current_step == "done"


def test_branches_receive_the_state_and_the_step():
    seen = []
    wf = Workflow("wf", steps=[Step("work", parallel=[
        Branch("b", run=lambda ctx: seen.append((dict(ctx.state), ctx.step)))])])

    started(wf, state={"email": "ann@example.com"})

    assert seen == [({"email": "ann@example.com"}, "work")]


def test_a_failed_branch_fails_the_step_only_once_all_branches_settled():
    x, i = started(two_branches(Calls(), fail=("mail",)), autorun=False)
    x.finish(x.claim(pending_token(x, "work:mail")))
    assert x.snapshot(i).status == "running"
    assert branch_statuses(x, i) == {"mail": "failed", "crm": "running"}

    x.finish(x.claim(pending_token(x, "work:crm")))

    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).current_step == "work"


def test_the_failure_message_names_the_step_with_one_line_per_failed_branch():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[
        Branch("a", run=calls.failing("a", "a broke")),
        Branch("b", run=calls.hook("b")),
        Branch("c", run=calls.failing("c", "c broke")),
    ])])

    x, i = started(wf)

    assert x.snapshot(i).errors == (FAILED, 'Branch "a": a broke', 'Branch "c": c broke')
    errors = [(e.step, e.error) for e in x.events_of(i) if e.type == "error"]
    assert errors == [("work", FAILED)]


def test_a_failed_branch_keeps_its_error():
    x, i = started(two_branches(Calls(), fail=("crm",)))

    crm = x.snapshot(i).branch("work", "crm")
    assert (crm.status, crm.error) == ("failed", "crm broke")


def test_retry_reruns_only_the_branches_that_failed():
    calls = Calls()
    outcomes = iter([RuntimeError("crm is down"), None])

    def crm(ctx):
        calls.append("crm")
        error = next(outcomes)
        if error:
            raise error

    wf = chain(Step("work", advance="auto", parallel=[Branch("mail", run=calls.hook("mail")),
                                                      Branch("crm", run=crm)]),
               Step("done"))
    x, i = started(wf)
    assert x.snapshot(i).errors == (FAILED, 'Branch "crm": crm is down')

    outcome = x.retry(i)

    assert outcome.moved
    assert sorted(calls) == ["crm", "crm", "mail"]
    assert x.snapshot(i).current_step == "done"


def test_a_branch_that_fails_again_on_retry_fails_the_step_again():
    calls = Calls()
    x, i = started(two_branches(calls, fail=("mail",)))

    x.retry(i)

    assert sorted(calls) == ["crm", "mail", "mail"]
    assert branch_statuses(x, i) == {"crm": "succeeded", "mail": "failed"}
    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors == (FAILED, 'Branch "mail": mail broke')


def test_a_bare_callable_branch_is_named_after_its_step_and_index():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[calls.hook("first"),
                                                      calls.failing("second", "nope")])])

    x, i = started(wf)

    assert branch_statuses(x, i) == {"work:0": "succeeded", "work:1": "failed"}
    assert x.snapshot(i).errors == (FAILED, 'Branch "work:1": nope')


def test_bare_callables_and_branches_mix_in_one_step():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[calls.hook("bare"),
                                                      Branch("named", run=calls.hook("named"))])])

    x, i = started(wf)

    assert branch_statuses(x, i) == {"work:0": "succeeded", "named": "succeeded"}


def test_operations_after_branches_start_once_every_branch_succeeded():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[Branch("b", run=calls.hook("branch"))],
                                    operations=[Operation("op", run=calls.run("op"))])])
    x, i = started(wf, autorun=False)
    assert [p.kind for p in x.pending] == ["branch"]
    assert x.snapshot(i).operation("op") is None

    x.finish(x.claim())

    assert [p.target for p in x.pending] == ["op"]
    x.run_pending()
    assert calls == ["branch", "op"]


def test_operations_after_branches_do_not_run_when_a_branch_failed():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[Branch("b", run=calls.failing("branch"))],
                                    operations=[Operation("op", run=calls.run("op"))])])

    x, i = started(wf)

    assert calls == ["branch"]
    assert x.snapshot(i).operation("op") is None
    assert x.snapshot(i).status == "failed"


def test_a_step_with_branches_and_operations_moves_on_after_both():
    calls = Calls()
    wf = chain(Step("work", advance="auto",
                    parallel=[Branch("b", run=calls.hook("branch"))],
                    operations=[Operation("op", run=calls.run("op"))]),
               Step("done"))

    x, i = started(wf)

    assert calls == ["branch", "op"]
    assert x.snapshot(i).current_step == "done"
    assert op(x, i, "op").status == "succeeded"


def test_succeeded_branches_are_not_run_again_when_the_step_is_reentered():
    calls = Calls()
    wf = chain(Step("first"),
               Step("work", parallel=[Branch("b", run=calls.hook("branch"))]))
    x, i = started(wf)
    x.next(i)

    x.back(i)
    x.next(i)

    assert calls == ["branch"]
    assert types(x, i).count("step-enter") == 3


def test_a_second_claim_of_a_running_branch_is_refused_so_it_never_runs_twice():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[Branch("b", run=calls.hook("b"))])])
    x, i = started(wf, autorun=False)
    (run,) = x.pending
    first = x.claim()
    x.pending.append(run)  # the queue delivers the same message again

    assert x.claim(run.token) is None
    x.finish(first)
    assert calls == ["b"]
    assert branch_statuses(x, i) == {"b": "succeeded"}


def test_a_branch_that_fails_while_validate_blocks_the_step_still_fails_it():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("fan", validate=lambda ctx: "Not yet", parallel=[
        Branch("ok", run=calls.run("ok")), Branch("bad", run=calls.failing("bad", "broken"))])])
    x, i = started(wf, autorun=False)
    assert not x.validate(i).moved  # blocked while both branches run

    x.run_pending()

    assert x.snapshot(i).status == "failed"
    assert x.snapshot(i).errors[0] == 'Parallel workflow step "fan" failed'
