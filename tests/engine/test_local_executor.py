"""The in-process executor: running work, firing deadlines, and a whole workflow."""

from __future__ import annotations

from django_workflows.engine import Branch, Operation, Step, Transition, Workflow
from django_workflows.testing.local import FakeClock, LocalExecutor

from .helpers_work import Calls, fails_first, one_operation, op, started, types

# -- driving work -----------------------------------------------------------


def test_autorun_runs_dispatched_work_within_the_command():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=calls.run("op", 7))))

    assert calls == ["op"]
    assert op(x, i, "op").result == 7
    assert x.pending == []


def test_with_autorun_off_attempts_wait_in_pending_until_claimed():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=calls.run("op"))), autorun=False)

    assert [(p.instance_id, p.kind, p.target, p.attempt) for p in x.pending] == [
        (i, "operation", "op", 1)]
    assert calls == []


def test_a_claimed_attempt_is_live_until_it_finishes():
    calls = Calls()
    x, _ = started(one_operation(Operation("op", run=calls.run("op"))), autorun=False)

    token = x.claim()

    assert list(x.live) == [token]
    assert x.pending == []
    assert calls == []
    x.finish(token)
    assert x.live == {}
    assert calls == ["op"]


def test_claim_answers_none_when_nothing_is_pending():
    x, _ = started(one_operation(Operation("op", run=lambda c: 1)))

    assert x.claim() is None


def test_run_pending_runs_what_the_finished_work_leads_to():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", operations=[
        Operation("a", run=calls.run("a")), Operation("b", run=calls.run("b"))])])
    x, _ = started(wf, autorun=False)

    x.run_pending()

    assert calls == ["a", "b"]
    assert x.pending == []


def test_run_until_settled_fires_retry_delays():
    attempts = []
    x, i = started(one_operation(Operation("op", run=fails_first(2, "ok", attempts), retries=2,
                                           retry_delay=3, backoff=2)))
    start = x.clock.now()
    assert op(x, i, "op").status == "waiting"

    x.run_until_settled()

    assert attempts == [1, 2, 3]
    assert op(x, i, "op").status == "succeeded"
    assert x.clock.now() == start + 3 + 6


def test_run_until_settled_stops_at_its_time_limit():
    x, i = started(one_operation(Operation("op", run=fails_first(1), retries=1,
                                           retry_delay=100)))
    start = x.clock.now()

    x.run_until_settled(max_seconds=50)

    assert op(x, i, "op").status == "waiting"
    assert x.clock.now() == start


def test_advance_fires_each_deadline_at_its_time():
    wf = one_operation(Operation("op", run=fails_first(99), retries=5, retry_delay=10),
                       timeout=25)
    x, i = started(wf)
    start = x.clock.now()

    x.advance(100)

    retries = [e.at - start for e in x.events_of(i) if e.type == "operation-queued"]
    errors = [(e.at - start, e.error) for e in x.events_of(i) if e.type == "error"]
    assert retries == [0, 10, 20]
    assert errors == [(25, 'Workflow step "work" timed out after 25s')]
    assert x.clock.now() == start + 100


def test_ctx_sleep_moves_the_fake_clock():
    clock = FakeClock(start=0)
    wf = one_operation(Operation("op", run=lambda ctx: ctx.sleep(5) or "slept"))
    x = LocalExecutor(wf, clock=clock)
    i = x.create("wf")

    x.start(i)

    assert clock.now() == 5
    assert op(x, i, "op").result == "slept"


def test_a_definition_given_to_create_is_remembered():
    x = LocalExecutor()
    wf = Workflow("solo", steps=[Step("only")])

    first = x.create(wf)
    second = x.create("solo")

    assert x.snapshot(first).workflow == x.snapshot(second).workflow == "solo"
    assert first != second


# -- the signup example of DESIGN.md section 1 ------------------------------


def signup_workflow(log: Calls) -> Workflow:
    tenants = iter(["timeout", "tenant-1"])

    def create_tenant(ctx):
        log.append(f"create-tenant #{ctx.attempt}")
        answer = next(tenants)
        if answer == "timeout":
            raise ConnectionError("tenant service unavailable")
        return {"tenant": answer, "email": ctx.state["email"]}

    def delete_tenant(result, ctx):
        log.append(f"delete-tenant {result['tenant']}")

    return Workflow(
        id="signup", version=1, title="Sign up",
        initial={"email": "", "plan": None},
        steps=[
            Step("account",
                 validate=lambda ctx: None if ctx.state["email"] else "Email is required"),
            Step("plan", when=lambda ctx: ctx.state["email"].endswith(".com")),
            Step("provision", advance="auto", timeout=60,
                 operations=[Operation("create-tenant", run=create_tenant, retries=3,
                                       retry_delay=2, timeout=30, rollback=delete_tenant)]),
            Step("welcome", parallel=[Branch("mail", run=log.hook("mail")),
                                      Branch("crm", run=log.hook("crm"))]),
        ],
        transitions=[Transition("account", "plan"), Transition("plan", "provision"),
                     Transition("provision", "welcome")],
    )


def test_the_signup_example_runs_to_completion():
    log = Calls()
    x = LocalExecutor(signup_workflow(log))
    i = x.create("signup")
    x.start(i)

    refused = x.next(i)
    assert (refused.code, x.snapshot(i).errors) == ("validation_failed", ("Email is required",))
    x.update_state(i, {"email": "ann@example.com", "plan": None})
    assert x.next(i).moved
    assert x.snapshot(i).current_step == "plan"
    x.update_state(i, lambda state: {**state, "plan": "pro"})
    x.next(i)  # provision: the first attempt fails, the retry waits 2s
    assert op(x, i, "create-tenant").status == "waiting"
    x.run_until_settled()
    assert x.snapshot(i).current_step == "welcome"
    assert x.next(i).moved

    snap = x.snapshot(i)
    assert snap.status == "completed"
    assert snap.history == ("account", "plan", "provision", "welcome")
    assert snap.completed_steps == ("account", "plan", "provision", "welcome")
    assert snap.state == {"email": "ann@example.com", "plan": "pro"}
    assert op(x, i, "create-tenant").result == {"tenant": "tenant-1",
                                                "email": "ann@example.com"}
    assert log[:2] == ["create-tenant #1", "create-tenant #2"]
    assert sorted(log[2:]) == ["crm", "mail"]
    assert types(x, i)[-1] == "complete"


def test_the_signup_example_skips_the_plan_step_for_other_addresses():
    log = Calls()
    x = LocalExecutor(signup_workflow(log))
    i = x.create("signup", {"email": "ann@example.org", "plan": None})
    x.start(i)

    x.next(i)
    x.run_until_settled()

    snap = x.snapshot(i)
    assert snap.current_step == "welcome"
    assert snap.skipped_steps == ("plan",)
    assert snap.history == ("account", "provision", "welcome")


def test_the_signup_example_rolls_back_the_tenant_it_created():
    log = Calls()
    x = LocalExecutor(signup_workflow(log))
    i = x.create("signup", {"email": "ann@example.org", "plan": None})
    x.start(i)
    x.next(i)
    x.run_until_settled()
    x.next(i)

    x.rollback(i)

    assert log[-1] == "delete-tenant tenant-1"
    assert x.snapshot(i).status == "idle"
    assert x.snapshot(i).state == {"email": "", "plan": None}
