"""The helpers users get for testing their own workflows (django_workflows.testing)."""

from __future__ import annotations

import pytest

from django_workflows import (
    Operation,
    Signal,
    Step,
    Timer,
    Transition,
    Workflow,
    registry,
    services,
)
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.testing import WorkflowTester

pytestmark = pytest.mark.django_db


def test_run_to_completion_drives_a_workflow_through_its_manual_steps():
    with WorkflowTester() as wf:
        instance = wf.create("wizard", state={"email": "ann@example.org", "plan": None})

        done = wf.run_to_completion(instance)

    assert done.status == "completed"
    assert done.history == ["account", "confirm"]  # "plan" is only for .com addresses


def test_background_work_runs_inside_the_tests_transaction():
    with WorkflowTester() as wf:
        instance = wf.create("back-office", start=True)

        assert wf.reload(instance).current_step == "done"
        assert wf.reload(instance).operations[0]["result"] == {"charge": "ch_1"}


def test_retry_delays_fire_when_the_fake_clock_moves():
    with WorkflowTester() as wf:
        instance = wf.create("bg-retrying", state={"fail_times": 2}, start=True)
        assert wf.reload(instance).operations[0]["status"] == "waiting"

        wf.advance(1)

        assert wf.reload(instance).operations[0]["attempt"] == 3
        assert wf.reload(instance).current_step == "done"


def test_a_step_timeout_fires_only_when_the_clock_reaches_it():
    with WorkflowTester() as wf:
        instance = wf.create("slow-retries", start=True)
        wf.advance(59)
        assert wf.reload(instance).status == "running"

        wf.advance(1)

        assert wf.reload(instance).status == "failed"
        assert wf.reload(instance).errors == ['Workflow step "pay" timed out after 60s']


def test_run_to_completion_says_where_a_workflow_got_stuck():
    with WorkflowTester() as wf:
        instance = wf.create("slow-retries", start=True)

        with pytest.raises(AssertionError, match='stopped \'failed\' at step \'pay\''):
            wf.run_to_completion(instance)


def test_assert_events_checks_the_event_types_in_order():
    with WorkflowTester() as wf:
        instance = wf.create("wizard", start=True)
        with pytest.raises(WorkflowNotMoved):
            wf.next(instance)

        wf.assert_events(instance, ["start", "step-enter", "validate"])
        wf.assert_events(instance, ["start", "validate"], contains=True)
        with pytest.raises(AssertionError):
            wf.assert_events(instance, ["validate", "start"], contains=True)


@pytest.fixture
def three_levels():
    """outer > middle > inner, whose operation fails once and is retried 5 s later."""
    def flaky(ctx):
        if ctx.attempt == 1:
            raise RuntimeError("not yet")
        return "done"

    inner = Workflow(id="testing-inner", steps=[Step("work", advance="auto", operations=[
        Operation("flaky", run=flaky, retries=1, retry_delay=5)])])
    middle = Workflow(id="testing-middle", steps=[Step("inner", nested=inner, advance="auto")])
    outer = Workflow(id="testing-outer", steps=[Step("middle", nested=middle, advance="auto")])
    registry.register(outer, origin="tests.test_testing")
    yield outer
    for definition in (outer, middle, inner):
        registry.unregister(definition.id)


def test_run_to_completion_waits_out_the_deadlines_of_a_grandchild(three_levels):
    with WorkflowTester() as wf:
        instance = wf.create("testing-outer", start=True)

        done = wf.run_to_completion(instance)

    assert done.status == "completed"


def test_a_signal_kept_before_its_step_waits_is_not_expired_by_the_fake_clock():
    """A minute of the tester's clock is a minute: a signal kept for a step that waits
    later is still kept when the clock moves, and the step takes it."""
    registry.register(Workflow(
        id="remind-then-pay", initial={"paid": None},
        steps=[Step("remind", wait=Timer(after=60)), Step("checkout"),
               Step("pay", wait=Signal("paid")), Step("done")],
        transitions=[Transition("remind", "checkout"), Transition("checkout", "pay"),
                     Transition("pay", "done")]), origin=__name__)
    try:
        with WorkflowTester() as wf:
            order = wf.create("remind-then-pay", start=True)
            assert services.signal("remind-then-pay", "paid", {"amount": 1},
                                   instance=order).kept
            wf.advance(60)  # the reminder's timer fires: a sweep runs
            wf.next(order)  # checkout: the payment step takes the signal kept for it
            assert wf.reload(order).current_step == "done"
    finally:
        registry.unregister("remind-then-pay")
