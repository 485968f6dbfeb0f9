"""Snapshots: to_json / from_json round-trip exactly, whatever the instance went through."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_workflows.engine import (
    Branch,
    BranchSnapshot,
    ErrorInfo,
    Operation,
    OperationSnapshot,
    Progress,
    RollbackItem,
    RollbackPlan,
    Step,
    WorkflowSnapshot,
    from_json,
    to_json,
)
from django_workflows.engine.snapshot import StepRun, StoppingAttempt
from django_workflows.testing.local import LocalExecutor

from .helpers_navigation import chain, created, started


def through_text(snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
    """The snapshot saved as JSON text and read back, as a database column holds it."""
    return from_json(json.loads(json.dumps(to_json(snapshot))))


CHILD = WorkflowSnapshot(
    id="c-1", workflow="address", version=2, status="blocked", state={"street": ""},
    current_step="street", history=("street",), errors=("Street is required",),
    parent_id="p-1", parent_step="setup", started_at=1_000_010.0)

SUB_OPERATION = OperationSnapshot(
    id="dns", step="provision", title="DNS", status="succeeded", attempt=2,
    progress=Progress(1), started_at=1_000_001.0, completed_at=1_000_002.5,
    result="ns1.example.com", children=(OperationSnapshot(
        id="zone", step="provision", title="Zone", status="succeeded", attempt=1,
        result=None),), logs=("zone created",))

OPERATION = OperationSnapshot(
    id="create-tenant", step="provision", title="Create tenant", description="In the CRM",
    status="failed", attempt=3, progress=Progress(2, 5, "copying"),
    started_at=1_000_000.0, completed_at=1_000_009.25,
    result={"tenant": [1, 2.5, None, True]}, error=ErrorInfo("RuntimeError", "quota exceeded"),
    children=(SUB_OPERATION,), metadata={"team": {"size": 3}, "tags": ["a"]},
    logs=("starting", "quota exceeded"), token="tok-1", retry_at=1_000_012.0)

FULL = WorkflowSnapshot(
    id="p-1", workflow="order", version=1, status="rolling-back",
    state={"email": "a@example.com", "seats": 3, "address": {"lines": ["1 Main St"]},
           "ok": True, "note": None},
    current_step="setup", completed_steps=("account", "provision"), skipped_steps=("intro",),
    history=("account", "provision", "setup"), errors=("Compensation failed",),
    operations=(OPERATION,),
    parallel=(BranchSnapshot("mail", "welcome", "succeeded"),
              BranchSnapshot("crm", "welcome", "failed", error="CRM is down", token="tok-2")),
    nested=CHILD, started_at=1_000_000.0, completed_at=None,
    step_run=StepRun("setup", "tok-3", 1_000_005.0, deadline=1_000_065.0),
    stopping=(StoppingAttempt("tok-4", "operation", "create-tenant", "Cancelled",
                              1_000_006.0, resume=True),),
    rollback=RollbackPlan(items=(
        RollbackItem("operation", "zone", step="provision", path=("create-tenant", "dns"),
                     status="done"),
        RollbackItem("branch", "mail", step="welcome", status="running", token="tok-5"),
        RollbackItem("step", "account", step="account", status="failed", error="boom"),
    )))


# -- the shape ----------------------------------------------------------------------------

def test_a_new_snapshot_round_trips():
    x, instance = created(chain(Step("account")), {"email": ""})
    snapshot = x.snapshot(instance)

    assert from_json(to_json(snapshot)) == snapshot


def test_a_snapshot_with_every_part_round_trips_exactly():
    assert from_json(to_json(FULL)) == FULL


def test_a_snapshot_round_trips_through_json_text():
    assert through_text(FULL) == FULL


def test_to_json_gives_plain_json_types_only():
    data = to_json(FULL)

    assert json.loads(json.dumps(data)) == data


def test_the_nested_child_is_inline():
    data = to_json(FULL)

    assert data["nested"]["id"] == "c-1"
    assert data["nested"]["errors"] == ["Street is required"]
    assert from_json(data).nested == CHILD


def test_an_operations_children_progress_and_error_round_trip():
    operation = from_json(to_json(FULL)).operations[0]

    assert operation.progress == Progress(2, 5, "copying")
    assert operation.error == ErrorInfo("RuntimeError", "quota exceeded")
    assert operation.children[0].children[0].id == "zone"
    assert operation == OPERATION


def test_the_rollback_plan_round_trips():
    plan = from_json(to_json(FULL)).rollback

    assert plan == FULL.rollback
    assert plan.items[0].path == ("create-tenant", "dns")
    assert plan.next_item == (1, FULL.rollback.items[1])


def test_the_json_uses_the_persisted_field_names():
    data = to_json(FULL)

    assert {"version", "state", "status", "current_step", "completed_steps", "skipped_steps",
            "history", "errors", "operations", "parallel", "nested"} <= set(data)


def test_fields_it_does_not_know_are_ignored():
    data = {**to_json(FULL), "from_a_newer_release": 1}
    data["operations"][0]["colour"] = "red"

    assert from_json(data) == FULL


def test_missing_optional_fields_take_their_defaults():
    snapshot = from_json({"id": "p-1", "workflow": "order", "version": 1})

    assert snapshot == WorkflowSnapshot(id="p-1", workflow="order", version=1)


# -- real instances ---------------------------------------------------------------------------

def noop(*args):
    return None


def provision(ctx):
    ctx.progress(1, 2, "tenant")
    ctx.log("creating tenant")
    dns = ctx.run_child(Operation("dns", run=lambda child: {"records": ["a", "mx"]}))
    if ctx.state.get("fail"):
        raise RuntimeError("quota exceeded")
    if ctx.state.get("block"):
        ctx.block("A payment card is needed")
    return {"tenant": 7, "dns": dns}


def branch(name: str):
    def run(ctx):
        if ctx.state.get("fail"):
            raise RuntimeError(f"{name} is down")

    return run


SUB = chain(Step("street", validate=lambda ctx: None if ctx.state.get("street") else "Street?",
                 compensate=noop), Step("city"), id="address", initial={"street": ""})

FLOW = chain(
    Step("account", validate=lambda ctx: None if ctx.state["email"] else "Email is required",
         compensate=noop),
    Step("upsell", when=lambda ctx: not ctx.state["fail"]),
    Step("provision", timeout=60, operations=[Operation(
        "create-tenant", run=provision, retries=1, retry_delay=5, timeout=20, rollback=noop)]),
    Step("welcome", advance="auto", parallel=[Branch("mail", run=branch("mail")),
                                              Branch("crm", run=branch("crm"),
                                                     compensate=noop)]),
    Step("setup", nested=SUB),
    Step("done", compensate=noop),
    id="order", initial={"email": "", "fail": False, "block": False})


def test_a_snapshot_in_the_middle_of_a_rollback_round_trips():
    x, instance = started(FLOW, {"email": "a@example.com", "fail": False, "block": False},
                          autorun=False)
    while x.snapshot(instance).current_step != "setup":
        x.next(instance)
        x.run_pending()
    x.rollback(instance)
    x.claim()
    snapshot = x.snapshot(instance)
    assert snapshot.rollback is not None and snapshot.operations and snapshot.parallel

    assert through_text(snapshot) == snapshot


COMMANDS = st.one_of(
    # Moving on is more frequent than turning back, so that runs get far into the workflow.
    st.sampled_from(["start", "start", "next", "next", "next", "next", "run", "run", "run", "run",
                     "claim", "claim", "finish", "finish", "interrupt", "back", "skip",
                     "validate", "retry", "retry", "cancel", "rollback", "rollback"]),
    st.tuples(st.just("update"), st.fixed_dictionaries({
        "email": st.sampled_from(["", "a@example.com"]), "fail": st.booleans(),
        "block": st.booleans()})),
    st.tuples(st.just("advance"), st.sampled_from([1, 5, 20, 60])),
    st.tuples(st.just("child"), st.sampled_from(["next", "back", "update"])),
)


def give(x: LocalExecutor, instance: str, command) -> None:
    if command == "run":
        x.run_pending()
    elif command == "claim":
        x.claim()
    elif command in ("finish", "interrupt"):
        if x.live:
            getattr(x, command)(next(iter(x.live)))
    elif isinstance(command, str):
        getattr(x, command)(instance)
    elif command[0] == "update":
        x.update_state(instance, command[1])
    elif command[0] == "advance":
        x.advance(command[1])
    else:
        child = x.snapshot(instance).nested
        if child is None:
            return
        if command[1] == "update":
            x.update_state(child.id, {"street": "1 Main St"})
        else:
            getattr(x, command[1])(child.id)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(COMMANDS, max_size=30))
def test_every_snapshot_an_instance_goes_through_round_trips(commands):
    x = LocalExecutor(FLOW, autorun=False)
    instance = x.create("order", {"email": "a@example.com", "fail": False, "block": False})

    for command in commands:
        give(x, instance, command)
        snapshot = x.snapshot(instance)
        text = json.dumps(to_json(snapshot))
        assert from_json(to_json(snapshot)) == snapshot
        assert from_json(json.loads(text)) == snapshot
