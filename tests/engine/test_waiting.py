"""Steps that wait for the world outside: a signal (with its correlation, payload schema,
timeout and kept signals) or a timer, in the pure engine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_workflows.engine import (
    DefinitionError,
    Operation,
    Signal,
    Step,
    Timer,
    Transition,
    Workflow,
)
from django_workflows.testing import FakeClock

from .helpers_navigation import chain, kinds, of_instance, started

PAID = {"type": "object", "required": ["amount"],
        "properties": {"amount": {"type": "integer", "minimum": 1}}}


def order(*, wait=None, validate=None, **options) -> Workflow:
    wait = wait or Signal("paid", correlate=lambda ctx: ctx.state["intent"], schema=PAID,
                          **options)
    return chain(Step("cart"), Step("payment", wait=wait, validate=validate), Step("ship"),
                 id="order", initial={"intent": "pi_1"})


def at_payment(definition: Workflow | None = None, **executor):
    x, i = started(definition or order(), **executor)
    x.next(i)
    return x, i


# -- signals -----------------------------------------------------------------------------


def test_entering_the_step_waits_with_its_correlation():
    x, i = at_payment()

    waiting = x.snapshot(i).waiting
    assert (waiting.kind, waiting.name, waiting.correlation, waiting.arrived) == (
        "signal", "paid", "pi_1", None)
    event = of_instance(x.events, i)[-1]
    assert (event.type, event.data["signal"], event.data["correlation"]) == (
        "signal-wait", "paid", "pi_1")


def test_next_is_refused_while_the_step_waits_for_its_signal():
    x, i = at_payment()

    outcome = x.next(i)

    assert (outcome.moved, outcome.code) == (False, "signal_awaited")
    assert x.snapshot(i).current_step == "payment"


def test_the_signal_puts_its_payload_into_the_state_and_moves_the_step_on():
    x, i = at_payment()

    outcome = x.signal(i, "paid", {"amount": 12}, message_id="evt_1", sender="7")

    snapshot = x.snapshot(i)
    assert outcome.moved and snapshot.current_step == "ship"
    assert snapshot.state["paid"] == {"amount": 12} and snapshot.waiting is None
    signal = next(e for e in of_instance(x.events, i) if e.type == "signal")
    assert signal.data == {"signal": "paid", "payload": {"amount": 12}, "sender": "7",
                           "message_id": "evt_1"}
    assert kinds(of_instance(x.events, i))[-4:] == ["signal", "validate", "step-leave",
                                                     "step-enter"]


def test_a_payload_that_breaks_the_schema_is_refused_naming_its_field():
    x, i = at_payment()

    outcome = x.signal(i, "paid", {"amount": 0})

    assert (outcome.moved, outcome.code) == (False, "invalid_payload")
    assert [problem.field for problem in outcome.field_errors] == ["amount"]
    assert x.snapshot(i).waiting.arrived is None and "paid" not in x.snapshot(i).state


def test_a_signal_for_another_name_or_correlation_is_not_waited_for():
    x, i = at_payment()

    assert x.signal(i, "refunded", {}).code == "not_waiting"
    assert x.signal(i, "paid", {"amount": 1}, correlation="pi_other").code == "not_waiting"
    assert x.signal(i, "paid", {"amount": 1}, correlation="pi_1").moved


def test_into_names_the_key_the_payload_goes_to():
    x, i = at_payment(order(into="payment"))

    x.signal(i, "paid", {"amount": 3})

    assert x.snapshot(i).state["payment"] == {"amount": 3}


def test_the_steps_validate_judges_the_state_the_signal_makes():
    def enough(ctx):
        return None if ctx.state["paid"]["amount"] >= ctx.state.get("minimum", 10) \
            else "Too little"

    x, i = at_payment(order(validate=enough))

    outcome = x.signal(i, "paid", {"amount": 5})

    snapshot = x.snapshot(i)
    assert outcome.moved  # the signal came: it is recorded
    assert (snapshot.status, snapshot.errors, snapshot.current_step) == (
        "blocked", ("Too little",), "payment")
    x.update_state(i, {**snapshot.state, "minimum": 5})
    assert x.snapshot(i).current_step == "ship"


def test_only_the_signal_writes_its_key():
    x, i = at_payment(order(into="payment"))

    outcome = x.update_state(i, {"intent": "pi_1", "payment": {"amount": 50}})

    assert (outcome.moved, outcome.code) == (False, "invalid_state")
    assert outcome.message == ('"payment" is written by the signal "paid" of step "payment"; '
                               "it cannot be set here")
    x.signal(i, "paid", {"amount": 3})
    assert x.update_state(i, {**x.snapshot(i).state, "note": "ok"}).moved
    assert x.update_state(i, {"intent": "pi_1", "note": "ok"}).code == "invalid_state"


def test_a_signal_kept_before_the_step_waits_is_taken_on_entering_it():
    x, i = started(order())
    x.keep_signal("paid", {"amount": 9}, correlation="pi_1", message_id="evt_9")

    x.next(i)

    snapshot = x.snapshot(i)
    assert snapshot.current_step == "ship" and snapshot.state["paid"] == {"amount": 9}
    signal = next(e for e in of_instance(x.events, i) if e.type == "signal")
    assert signal.data["kept"] is True and signal.data["message_id"] == "evt_9"
    assert x.kept == []


def test_a_kept_signal_with_a_wrong_payload_is_refused_and_the_step_still_waits():
    x, i = started(order())
    x.keep_signal("paid", {"amount": "lots"}, instance_id=i)

    x.next(i)

    assert x.snapshot(i).waiting.arrived is None and x.kept == []


def test_the_timeout_fails_the_step_and_retry_waits_again():
    clock = FakeClock(0)
    x, i = at_payment(order(timeout=60), clock=clock)

    x.advance(60)

    snapshot = x.snapshot(i)
    assert (snapshot.status, snapshot.errors) == ("failed", (
        'Workflow step "payment" waited for the signal "paid" longer than 60s',))
    assert "signal-timeout" in kinds(of_instance(x.events, i))
    x.retry(i)
    assert x.snapshot(i).waiting.until == 120 and x.snapshot(i).status == "running"


def test_a_timeout_that_continues_stores_none_and_follows_the_transitions():
    definition = Workflow("order", initial={"intent": "pi_1"}, steps=[
        Step("payment", wait=Signal("paid", timeout=timedelta(hours=1), on_timeout="continue")),
        Step("ship"), Step("remind")], transitions=[
        Transition("payment", "ship", when=lambda ctx: ctx.state["paid"] is not None),
        Transition("payment", "remind")])
    x, i = started(definition, clock=FakeClock(0))

    x.advance(3600)

    assert x.snapshot(i).current_step == "remind" and x.snapshot(i).state["paid"] is None


def test_a_signal_in_time_clears_its_timeout_and_a_late_deadline_is_stale():
    clock = FakeClock(0)
    x, i = at_payment(order(timeout=60), clock=clock)

    x.signal(i, "paid", {"amount": 1})
    x.advance(120)

    assert x.snapshot(i).current_step == "ship" and x.deadlines == {}


@pytest.mark.parametrize("leave", ["skip", "back", "cancel"])
def test_leaving_the_step_another_way_ends_its_wait(leave):
    x, i = at_payment(order(timeout=60), clock=FakeClock(0))

    getattr(x, leave)(i)

    assert x.snapshot(i).waiting is None and x.deadlines == {}
    assert x.signal(i, "paid", {"amount": 1}).code in ("not_waiting", "cancelled")


def test_rollback_ends_the_wait():
    x, i = at_payment(order(timeout=60), clock=FakeClock(0))

    x.rollback(i)
    x.run_until_settled()

    assert x.snapshot(i).status == "idle" and x.snapshot(i).waiting is None


# -- timers --------------------------------------------------------------------------------


def test_a_timer_after_a_delay_moves_the_step_on_when_it_falls_due():
    x, i = at_payment(order(wait=Timer(after=timedelta(days=3))), clock=FakeClock(0))

    assert x.next(i).code == "timer_pending"
    x.advance(3 * 24 * 3600 - 1)
    assert x.snapshot(i).current_step == "payment"
    x.advance(1)

    assert x.snapshot(i).current_step == "ship"
    assert kinds(of_instance(x.events, i))[-5:-2] == ["timer-wait", "timer-fire", "validate"]


def test_a_timer_until_a_time_asks_its_hook_on_entering_the_step():
    due = datetime(2030, 1, 1, tzinfo=UTC)
    x, i = at_payment(order(wait=Timer(until=lambda ctx: due)), clock=FakeClock(0))

    assert x.snapshot(i).waiting.until == due.timestamp()
    x.advance(due.timestamp())
    assert x.snapshot(i).current_step == "ship"


def test_a_timer_whose_hook_returns_no_aware_time_fails_the_step_naming_it():
    x, i = at_payment(order(wait=Timer(until=lambda ctx: datetime(2030, 1, 1))))

    snapshot = x.snapshot(i)
    assert snapshot.status == "failed"
    assert snapshot.errors[0].startswith('The until hook of step "payment"')


def test_a_timer_needs_exactly_one_of_after_and_until():
    with pytest.raises(DefinitionError, match='Step "payment": timer needs after') as error:
        Step("payment", wait=Timer())
    assert error.value.kind == "timer_without_time"
    with pytest.raises(DefinitionError):
        Step("payment", wait=Timer(after=1, until=lambda ctx: 0))


def test_a_signal_checks_its_options_naming_its_step():
    with pytest.raises(DefinitionError, match='Step "s": signal "paid": on_timeout'):
        Step("s", wait=Signal("paid", on_timeout="later"))
    with pytest.raises(DefinitionError, match="not a candidate"):
        Step("s", wait=Signal("paid", senders=["bank"]))
    with pytest.raises(DefinitionError, match="wait must be a Signal or a Timer"):
        Step("s", wait="paid")


def _broken(ctx):
    raise RuntimeError("the courier's API is down")


def test_a_timer_does_not_fire_on_a_failed_instance_and_waits_again_after_retry():
    wait = Timer(after=60)
    definition = chain(Step("cart"),
                       Step("payment", wait=wait, operations=[Operation("book", run=_broken)]),
                       Step("ship"), id="order")
    x, i = at_payment(definition, clock=FakeClock(0))
    assert x.snapshot(i).status == "failed"

    x.advance(120)

    snapshot = x.snapshot(i)
    assert (snapshot.status, snapshot.current_step) == ("failed", "payment")
    assert "timer-fire" not in kinds(of_instance(x.events, i))
    x.retry(i)  # the step's work and its timer again
    assert x.snapshot(i).waiting.until == 120 + 60


def test_the_steps_that_wait_for_one_signal_declare_one_fan_out():
    with pytest.raises(DefinitionError, match='signal "ping" declare fan_out "all" and "first"'):
        chain(Step("a", wait=Signal("ping")), Step("b", wait=Signal("ping", fan_out="first")))
    with pytest.raises(DefinitionError, match='fan_out must be "all" or "first"'):
        Step("s", wait=Signal("ping", fan_out="some"))
