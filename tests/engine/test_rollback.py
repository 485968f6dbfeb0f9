"""Rollback: the compensation plan, its exact order, resuming, refusals, the reset."""

from __future__ import annotations

from django_workflows.engine import Branch, Operation, Step, Workflow
from django_workflows.testing.local import LocalExecutor

from .helpers_work import Calls, chain, one_operation, op, started, types

# -- the order --------------------------------------------------------------


def everything(calls: Calls) -> Workflow:
    """A parent with operations (and children), branches, a nested child and compensations."""
    grandchild = Operation("grandchild", run=lambda c: "grandchild-result",
                           rollback=calls.rollback("grandchild"))
    first_child = Operation("first-child", run=lambda c: "first-child-result",
                            rollback=calls.rollback("first-child"))

    def second_child_run(ctx):
        ctx.run_child(grandchild)
        return "second-child-result"

    second_child = Operation("second-child", run=second_child_run,
                             rollback=calls.rollback("second-child"), children=[grandchild])

    def provision(ctx):
        ctx.run_child(first_child)
        ctx.run_child(second_child)
        return "provision-result"

    child = chain(
        Step("k1", compensate=calls.hook("child:k1"), operations=[
            Operation("charge", run=lambda c: "charge-result", rollback=calls.rollback("charge"))]),
        Step("k2", compensate=calls.hook("child:k2")),
        workflow_id="billing")
    parent = chain(
        Step("s1", compensate=calls.hook("step:s1"), operations=[
            Operation("provision", run=provision, rollback=calls.rollback("provision"),
                      children=[first_child, second_child])]),
        Step("s2", compensate=calls.hook("step:s2"), parallel=[
            Branch("mail", run=lambda c: None, compensate=calls.hook("branch:mail")),
            Branch("crm", run=lambda c: None, compensate=calls.hook("branch:crm")),
            Branch("plain", run=lambda c: None)]),
        Step("s3", compensate=calls.hook("step:s3"), parallel=[
            Branch("audit", run=lambda c: None, compensate=calls.hook("branch:audit"))]),
        Step("nest", nested=child, compensate=calls.hook("step:nest")),
        Step("s4", compensate=calls.hook("step:s4"), operations=[
            Operation("notify", run=lambda c: "notify-result", rollback=calls.rollback("notify"))]),
        workflow_id="parent")
    return parent


def drive_to(x: LocalExecutor, instance: str, step: str) -> None:
    for _ in range(20):
        if x.snapshot(instance).current_step == step:
            return
        assert x.next(instance).moved
    raise AssertionError(f"never reached {step}")


def test_rollback_undoes_everything_in_the_documented_order():
    calls = Calls()
    parent = everything(calls)
    x, i = started(parent)
    drive_to(x, i, "s4")
    assert x.snapshot(i).completed_steps == ("s1", "s2", "s3", "nest")

    outcome = x.rollback(i)

    assert outcome.moved
    assert calls == [
        # 1. operation rollbacks: newest operation first, children (newest first) before it
        ("notify", "notify-result"),
        ("grandchild", "grandchild-result"),
        ("second-child", "second-child-result"),
        ("first-child", "first-child-result"),
        ("provision", "provision-result"),
        # 2. succeeded branches: last step first, last branch first
        "branch:audit", "branch:crm", "branch:mail",
        # 3. the nested child's own full rollback
        ("charge", "charge-result"), "child:k2", "child:k1",
        # 4. compensate of completed steps, newest first (s4 is current, not completed)
        "step:nest", "step:s3", "step:s2", "step:s1",
    ]
    assert x.snapshot(i).status == "idle"


def test_a_completed_workflow_compensates_its_last_step_too():
    calls = Calls()
    x, i = started(chain(Step("a", compensate=calls.hook("a")),
                         Step("b", compensate=calls.hook("b"))))
    x.next(i)
    x.next(i)
    assert x.snapshot(i).status == "completed"

    x.rollback(i)

    assert calls == ["b", "a"]


def test_skipped_steps_are_not_compensated():
    calls = Calls()
    x, i = started(chain(Step("a", compensate=calls.hook("a")),
                         Step("b", compensate=calls.hook("b")), Step("c")))
    x.next(i)
    x.skip(i)

    x.rollback(i)

    assert calls == ["a"]


def test_rollback_gets_the_operations_last_result():
    calls = Calls()
    x, i = started(one_operation(Operation(
        "op", run=lambda ctx: {"attempt": ctx.attempt, "id": 7} if ctx.attempt == 2
        else 1 / 0, retries=1, rollback=calls.rollback("op"))))
    assert op(x, i, "op").status == "succeeded"

    x.rollback(i)

    assert calls == [("op", {"attempt": 2, "id": 7})]


def test_the_rollback_of_a_failed_operation_runs_too_with_no_result():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=calls.failing("run"),
                                           rollback=calls.rollback("op"))))
    assert x.snapshot(i).status == "failed"

    x.rollback(i)

    assert calls == ["run", ("op", None)]


def test_an_operation_rollback_is_told_its_attempt_and_state():
    seen = []

    def rollback(result, ctx):
        seen.append((result, ctx.attempt, dict(ctx.state)))

    x, i = started(one_operation(Operation("op", run=lambda c: "r", rollback=rollback)),
                   state={"tenant": "acme"})

    x.rollback(i)

    assert seen == [("r", 1, {"tenant": "acme"})]


def test_only_succeeded_branches_with_a_compensation_are_compensated():
    calls = Calls()
    wf = Workflow("wf", steps=[Step("work", parallel=[
        Branch("ok", run=lambda c: None, compensate=calls.hook("ok")),
        Branch("broken", run=calls.failing("run broken"), compensate=calls.hook("broken")),
    ])])
    x, i = started(wf)
    assert x.snapshot(i).status == "failed"

    x.rollback(i)

    assert calls == ["run broken", "ok"]


def test_a_child_operation_that_is_not_declared_is_not_rolled_back():
    calls = Calls()
    undeclared = Operation("undeclared", run=lambda c: 1, rollback=calls.rollback("undeclared"))
    x, i = started(one_operation(Operation("op", run=lambda ctx: ctx.run_child(undeclared),
                                           rollback=calls.rollback("op"))))

    x.rollback(i)

    assert calls == [("op", 1)]


def test_a_child_that_is_an_operation_of_the_workflow_is_rolled_back():
    calls = Calls()
    shared = Operation("shared", run=lambda c: "s", rollback=calls.rollback("shared"))
    wf = chain(Step("a", operations=[Operation("op", run=lambda ctx: ctx.run_child(shared),
                                               rollback=calls.rollback("op"))]),
               Step("b", operations=[shared]))
    x, i = started(wf)

    x.rollback(i)

    assert calls == [("shared", "s"), ("op", "s")]


# -- running the plan -------------------------------------------------------


def two_step_compensations(calls: Calls, *, failing: str | None = None) -> Workflow:
    def hook(name: str):
        return calls.failing(name, f"{name} could not be undone") if name == failing \
            else calls.hook(name)

    return chain(Step("a", compensate=hook("a")), Step("b", compensate=hook("b")),
                 Step("c", compensate=hook("c")), Step("d"))


def at_last_step(definition: Workflow, autorun: bool = True) -> tuple[LocalExecutor, str]:
    x, i = started(definition, autorun=autorun)
    drive_to(x, i, "d")
    return x, i


def test_rollback_is_rolling_back_while_compensations_run():
    x, i = at_last_step(two_step_compensations(Calls()), autorun=False)

    outcome = x.rollback(i)

    assert outcome.moved
    assert x.snapshot(i).status == "rolling-back"
    assert types(x, i)[-1] == "rollback"
    assert [(p.kind, p.target) for p in x.pending] == [("compensation", "step:c")]


def test_compensations_run_one_at_a_time_as_background_work():
    x, i = at_last_step(two_step_compensations(Calls()), autorun=False)
    x.rollback(i)

    x.finish(x.claim())

    assert [p.target for p in x.pending] == ["step:b"]


def test_each_finished_compensation_is_recorded_with_an_event():
    x, i = at_last_step(two_step_compensations(Calls()))

    x.rollback(i)

    assert [e.data["item"] for e in x.events_of(i) if e.type == "compensate"] == [
        "step:c", "step:b", "step:a"]


def test_a_finished_rollback_resets_the_instance_to_idle_with_a_fresh_initial_state():
    made = []

    def initial():
        made.append(1)
        return {"email": "", "count": len(made)}

    wf = chain(Step("a", operations=[Operation("op", run=lambda c: 1)],
                    parallel=[Branch("b", run=lambda c: None)]), Step("b"),
               workflow_id="wf", initial=initial)
    x = LocalExecutor(wf)
    i = x.create("wf")
    x.start(i)
    x.update_state(i, {"email": "ann@example.com", "count": 99})
    x.next(i)

    x.rollback(i)

    snap = x.snapshot(i)
    assert snap.status == "idle"
    assert snap.state == {"email": "", "count": 2}
    assert (snap.current_step, snap.history, snap.completed_steps, snap.skipped_steps) == (
        None, (), (), ())
    assert (snap.operations, snap.parallel, snap.errors, snap.nested) == ((), (), (), None)
    assert (snap.started_at, snap.completed_at, snap.rollback) == (None, None, None)


def test_a_rollback_keeps_the_event_log():
    x, i = at_last_step(two_step_compensations(Calls()))
    before = types(x, i)

    x.rollback(i)

    assert types(x, i)[:len(before)] == before
    assert types(x, i)[len(before)] == "rollback"


def test_a_plain_initial_state_is_a_fresh_copy_after_rollback():
    initial = {"tags": []}
    wf = chain(Step("a"), workflow_id="wf", initial=initial)
    x, i = started(wf)
    x.update_state(i, lambda state: {"tags": [*state["tags"], "x"]})

    x.rollback(i)

    assert x.snapshot(i).state == {"tags": []}
    assert initial == {"tags": []}


def test_a_rolled_back_instance_starts_again_and_runs_its_operations_again():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=calls.run("op"))))
    x.rollback(i)

    outcome = x.start(i)

    assert outcome.moved
    assert calls == ["op", "op"]
    assert op(x, i, "op").status == "succeeded"


def test_a_raising_compensation_stops_the_rollback_with_its_error():
    calls = Calls()
    x, i = at_last_step(two_step_compensations(calls, failing="b"))

    x.rollback(i)

    snap = x.snapshot(i)
    assert calls == ["c", "b"]
    assert snap.status == "rolling-back"
    assert snap.errors == ("b could not be undone",)
    assert [(e.type, e.error) for e in x.events_of(i)][-1] == ("error", "b could not be undone")


def test_a_second_rollback_resumes_without_rerunning_finished_items():
    calls = Calls()
    outcomes = iter([RuntimeError("b is locked"), None])

    def compensate_b(ctx):
        calls.append("b")
        error = next(outcomes)
        if error:
            raise error

    wf = chain(Step("a", compensate=calls.hook("a")), Step("b", compensate=compensate_b),
               Step("c", compensate=calls.hook("c")), Step("d"))
    x, i = at_last_step(wf)
    x.rollback(i)

    outcome = x.rollback(i)

    assert outcome.moved
    assert calls == ["c", "b", "b", "a"]
    assert x.snapshot(i).status == "idle"
    assert [e.data["item"] for e in x.events_of(i) if e.type == "compensate"] == [
        "step:c", "step:b", "step:a"]


def test_an_interrupted_compensation_stops_the_rollback_and_a_second_rollback_resumes_it():
    calls = Calls()
    x, i = at_last_step(two_step_compensations(calls), autorun=False)
    x.rollback(i)
    x.finish(x.claim())  # c

    x.interrupt(x.claim())  # b: its worker died

    snap = x.snapshot(i)
    assert snap.status == "rolling-back"
    assert snap.errors == ("Workflow work was interrupted and must be retried",)
    assert x.pending == []

    x.rollback(i)
    x.run_pending()

    assert calls == ["c", "b", "a"]
    assert x.snapshot(i).status == "idle"


# -- refusals ---------------------------------------------------------------


def test_rollback_of_an_instance_that_never_started_is_refused():
    x = LocalExecutor(chain(Step("a")))
    i = x.create("wf")

    outcome = x.rollback(i)

    assert (outcome.moved, outcome.code) == (False, "not_started")
    assert x.snapshot(i).status == "idle"


def test_rollback_is_refused_while_work_is_in_flight():
    x, i = started(one_operation(Operation("op", run=lambda c: 1)), autorun=False)
    before = x.snapshot(i)

    outcome = x.rollback(i)

    assert (outcome.moved, outcome.code) == (False, "work_in_progress")
    assert x.snapshot(i) == before


def test_rollback_is_refused_while_a_cancelled_attempt_is_still_stopping():
    x, i = started(one_operation(Operation("op", run=lambda c: 1)), autorun=False)
    token = x.claim()
    x.cancel(i)

    outcome = x.rollback(i)

    assert (outcome.moved, outcome.code) == (False, "still_stopping")
    assert outcome.message == 'Workflow "wf" cannot roll back while cancellation is pending'

    x.finish(token)
    assert x.rollback(i).moved
    assert x.snapshot(i).status == "idle"


def test_rollback_is_refused_while_a_timed_out_step_is_still_stopping():
    x, i = started(one_operation(Operation("op", run=lambda c: 1), timeout=10), autorun=False)
    token = x.claim()
    x.advance(10)

    outcome = x.rollback(i)

    assert (outcome.moved, outcome.code) == (False, "still_stopping")
    assert outcome.message == (
        'Workflow "wf" cannot roll back while a timed-out step is still stopping')

    x.finish(token)
    assert x.rollback(i).moved


def test_rollback_is_refused_while_a_compensation_is_running():
    x, i = at_last_step(two_step_compensations(Calls()), autorun=False)
    x.rollback(i)
    x.claim()

    outcome = x.rollback(i)

    assert (outcome.moved, outcome.code) == (False, "rollback_in_progress")


# -- cancel during a rollback -----------------------------------------------


def test_cancel_during_a_rollback_stops_it_and_rollback_resumes_it():
    calls = Calls()
    x, i = at_last_step(two_step_compensations(calls), autorun=False)
    x.rollback(i)
    x.finish(x.claim())  # c

    cancelled = x.cancel(i)  # b is pending, not yet claimed

    assert cancelled.moved
    assert x.snapshot(i).status == "cancelled"
    assert x.pending == []

    resumed = x.rollback(i)
    x.run_pending()

    assert resumed.moved
    assert calls == ["c", "b", "a"]
    assert x.snapshot(i).status == "idle"


def test_a_compensation_told_to_stop_that_still_finished_counts_as_done():
    calls = Calls()
    x, i = at_last_step(two_step_compensations(calls), autorun=False)
    x.rollback(i)
    token = x.claim()  # c is running
    x.cancel(i)
    assert x.live[token].stop_reason == "Cancelled"

    x.finish(token)  # c finishes anyway
    x.rollback(i)
    x.run_pending()

    assert calls == ["c", "b", "a"]
    assert x.snapshot(i).status == "idle"


def test_a_compensation_told_to_stop_that_failed_runs_again_on_resume():
    calls = Calls()
    outcomes = iter([RuntimeError("interrupted by the cancel"), None])

    def compensate_c(ctx):
        calls.append("c")
        error = next(outcomes)
        if error:
            raise error

    wf = chain(Step("a", compensate=calls.hook("a")), Step("c", compensate=compensate_c),
               Step("d"))
    x, i = at_last_step(wf, autorun=False)
    x.rollback(i)
    token = x.claim()
    x.cancel(i)
    x.finish(token)

    x.rollback(i)
    x.run_pending()

    assert calls == ["c", "c", "a"]
    assert x.snapshot(i).status == "idle"


def test_a_cancelled_workflow_can_be_rolled_back():
    calls = Calls()
    x, i = at_last_step(two_step_compensations(calls))
    x.cancel(i)

    x.rollback(i)

    assert calls == ["c", "b", "a"]
    assert x.snapshot(i).status == "idle"


# -- the nested child -------------------------------------------------------


def test_the_nested_child_rolls_back_as_an_instance_of_its_own():
    calls = Calls()
    child = chain(Step("k1", compensate=calls.hook("k1")), Step("k2"), workflow_id="child")
    x, i = started(chain(Step("nest", nested=child), Step("after"), workflow_id="parent"))
    child_id = x.snapshot(i).nested.id
    x.next(i)
    x.next(i)

    x.rollback(i)

    assert calls == ["k1"]
    assert "rollback" in types(x, child_id)
    assert x.snapshot(i).status == "idle"
    assert x.snapshot(i).nested is None


def test_a_failing_compensation_in_the_child_stops_the_parents_rollback():
    calls = Calls()
    outcomes = iter([RuntimeError("refund failed"), None])

    def refund(ctx):
        calls.append("refund")
        error = next(outcomes)
        if error:
            raise error

    child = chain(Step("k1", compensate=refund), Step("k2"), workflow_id="child")
    wf = chain(Step("first", compensate=calls.hook("first")), Step("nest", nested=child),
               Step("after"), workflow_id="parent")
    x, i = started(wf)
    for _ in range(4):
        x.next(i)
    assert x.snapshot(i).current_step == "after"

    x.rollback(i)

    assert calls == ["refund"]
    assert x.snapshot(i).status == "rolling-back"
    assert x.snapshot(i).errors == ('Nested workflow "child": refund failed',)

    x.rollback(i)

    assert calls == ["refund", "refund", "first"]
    assert x.snapshot(i).status == "idle"


def test_a_second_claim_of_a_running_compensation_is_refused():
    calls = Calls()
    x, i = at_last_step(two_step_compensations(calls), autorun=False)
    x.rollback(i)
    (run,) = x.pending
    token = x.claim()
    x.pending.append(run)  # the queue delivers the same message again

    assert x.claim(run.token) is None
    x.finish(token)
    x.run_pending()
    assert calls == ["c", "b", "a"]


def test_cancel_during_the_childs_rollback_then_rollback_resumes_both():
    calls = Calls()
    child = chain(Step("k1", compensate=calls.hook("k1")),
                  Step("k2", compensate=calls.hook("k2")), Step("k3"), workflow_id="child")
    wf = chain(Step("first", compensate=calls.hook("first")), Step("nest", nested=child),
               workflow_id="parent")
    x, i = started(wf, autorun=False)
    for _ in range(3):
        x.next(i)
    child_id = x.snapshot(i).nested.id
    assert x.snapshot(child_id).current_step == "k3"
    x.rollback(i)
    running = x.claim()  # the child's k2 compensation

    x.cancel(i)
    assert (x.snapshot(i).status, x.snapshot(child_id).status) == ("cancelled", "cancelled")
    assert x.rollback(i).code == "still_stopping"
    x.finish(running)  # k2 finishes anyway: done

    assert x.rollback(i).moved
    x.run_pending()
    assert calls == ["k2", "k1", "first"]
    assert x.snapshot(i).status == "idle"


def test_rollback_is_refused_while_the_work_of_a_skipped_step_is_still_stopping():
    wf = chain(Step("work", operations=[Operation("op", run=lambda c: 1)]), Step("next"))
    x, i = started(wf, autorun=False)
    token = x.claim()
    x.skip(i)

    outcome = x.rollback(i)

    assert (outcome.moved, outcome.code) == (False, "still_stopping")
    assert outcome.message == (
        'Workflow "wf" cannot roll back while work it left is still stopping')
    x.finish(token)
    assert x.rollback(i).moved


def test_rollback_events_say_when_it_started_and_when_it_finished():
    calls = Calls()
    x, i = started(one_operation(Operation("op", run=lambda c: 1, rollback=calls.rollback("op"))))

    x.rollback(i)

    rollbacks = [(e.type, e.data.get("phase")) for e in x.events_of(i)
                 if e.type in ("rollback", "compensate")]
    assert rollbacks == [("rollback", "started"), ("compensate", None),
                         ("rollback", "finished")]


def test_a_child_cancelled_during_its_parents_rollback_stops_the_parents_rollback():
    calls = Calls()
    child = chain(Step("k1", compensate=calls.hook("k1")), Step("k2"), workflow_id="child")
    wf = chain(Step("first", compensate=calls.hook("first")), Step("nest", nested=child),
               workflow_id="parent")
    x, i = started(wf, autorun=False)
    for _ in range(2):
        x.next(i)
    child_id = x.snapshot(i).nested.id
    x.rollback(i)  # the child's k1 compensation waits for a worker

    x.cancel(child_id)

    assert x.snapshot(i).status == "rolling-back"
    assert x.snapshot(i).errors == ('Nested workflow "child" was cancelled',)
    assert calls == []
