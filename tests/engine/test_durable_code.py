"""Durable code inside an operation, in the pure engine: steps journaled and replayed,
waits that end the attempt (a timer, a signal, a task) and what wakes them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from django_workflows.engine import (
    DefinitionError,
    JournalEntry,
    MemoryJournal,
    Operation,
    Signal,
    Step,
    Task,
    Transition,
    Workflow,
)

from .helpers_work import op, started, types

PAID = {"type": "object", "required": ["amount"],
        "properties": {"amount": {"type": "integer", "minimum": 1}}}
REVIEW = {"type": "object", "required": ["approve"],
          "properties": {"approve": {"type": "boolean"}}}


def invoice(run, **options) -> Workflow:
    return Workflow("invoice", initial={"lines": [1, 2, 3]}, steps=[
        Step("charge", advance="auto", operations=[Operation("charge", run=run, **options)]),
        Step("done")], transitions=[Transition("charge", "done")])


class Charges:
    """What the code's side effects did, in order (the journal's witness)."""

    def __init__(self, fail_at: set[int] | None = None) -> None:
        self.made: list[int] = []
        self.fail_at = set(fail_at or ())

    def charge(self, line: int) -> str:
        if line in self.fail_at:
            self.fail_at.discard(line)
            raise RuntimeError(f"card declined for line {line}")
        self.made.append(line)
        return f"ch_{line}"


# -- steps ----------------------------------------------------------------------------


def test_a_retried_attempt_does_not_run_the_steps_that_finished():
    charges = Charges(fail_at={3})

    def run(ctx):
        return [ctx.step(f"charge-{line}", charges.charge, line) for line in ctx.state["lines"]]

    x, i = started(invoice(run, retries=1))

    assert charges.made == [1, 2, 3]  # 1 and 2 once, though the code ran twice
    assert op(x, i, "charge").result == ["ch_1", "ch_2", "ch_3"]
    assert op(x, i, "charge").attempt == 2
    assert x.snapshot(i).current_step == "done"


class ReadsCounted(MemoryJournal):
    """A journal that counts how often an attempt reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def entries(self, key: str) -> Sequence[JournalEntry]:
        self.reads += 1
        return super().entries(key)


def test_the_first_attempt_reads_no_journal_and_a_retry_replays_from_it():
    charges = Charges(fail_at={3})

    def run(ctx):
        return [ctx.step(f"charge-{line}", charges.charge, line) for line in ctx.state["lines"]]

    x, i = started(invoice(run, retries=1), autorun=False)
    x.journal = journal = ReadsCounted()
    x.run_pending()

    assert journal.reads == 1  # the retry's, not the first attempt's: nothing was in it
    assert charges.made == [1, 2, 3]  # the retry answered 1 and 2 from the journal
    assert op(x, i, "charge").attempt == 2


def test_a_step_is_retried_by_its_own_policy_within_the_attempt():
    charges = Charges(fail_at={2})

    def run(ctx):
        return [ctx.step(f"charge-{line}", charges.charge, line, retries=1, retry_delay=0)
                for line in ctx.state["lines"]]

    x, i = started(invoice(run))

    assert (op(x, i, "charge").status, op(x, i, "charge").attempt) == ("succeeded", 1)
    journal = x.journal.entries(op(x, i, "charge").journal)
    assert [(e.name, e.tries) for e in journal] == [
        ("charge-1", 1), ("charge-2", 2), ("charge-3", 1)]


def test_ctx_step_is_still_the_step_s_id():
    seen = []

    def run(ctx):
        seen.append((ctx.step == "charge", str(ctx.step), ctx.step_id))
        return None

    started(invoice(run))

    assert seen == [(True, "charge", "charge")]


def test_a_changed_order_is_refused_with_both_steps_named():
    order = ["load", "charge"]
    made = []

    def run(ctx):
        for name in list(order):
            ctx.step(name, made.append, name)
        if ctx.attempt == 1:
            order.reverse()  # a deploy between two attempts reorders the code
            raise RuntimeError("the first attempt fails after its steps")
        return "finished"

    x, i = started(invoice(run, retries=3))

    operation = op(x, i, "charge")
    assert operation.status == "failed"
    assert operation.attempt == 2  # no third attempt: a retry would fail the same way
    assert operation.error.name == "ReplayMismatch"
    assert 'step "charge" at position 0' in operation.error.message
    assert 'step "load"' in operation.error.message
    assert made == ["load", "charge"]
    assert x.snapshot(i).status == "failed"


def test_a_step_result_that_is_no_json_fails_the_attempt_naming_the_step():
    def run(ctx):
        return ctx.step("load", lambda: object())

    x, i = started(invoice(run))

    assert op(x, i, "charge").error.message.startswith('The result of step "load" is not JSON')


# -- sleeping ---------------------------------------------------------------------------


def test_a_durable_sleep_ends_the_attempt_and_the_timer_wakes_the_code():
    charges = Charges()

    def run(ctx):
        first = ctx.step("charge-1", charges.charge, 1)
        ctx.sleep(timedelta(hours=1))
        second = ctx.step("charge-2", charges.charge, 2)
        return [first, second]

    x, i = started(invoice(run, durable=True))

    operation = op(x, i, "charge")
    assert (operation.status, operation.token) == ("suspended", None)
    assert x.pending == [] and x.live == {}  # no worker held
    waiting = x.snapshot(i).waiting
    assert (waiting.kind, waiting.operation, waiting.position) == ("timer", "charge", 1)
    assert charges.made == [1]

    x.advance(3599)
    assert op(x, i, "charge").status == "suspended"
    x.advance(1)

    assert op(x, i, "charge").result == ["ch_1", "ch_2"]
    assert charges.made == [1, 2]
    assert x.snapshot(i).current_step == "done"
    assert x.snapshot(i).waiting is None
    kinds = [e.kind for e in x.journal.entries(operation.journal)]
    assert kinds == ["step", "sleep", "step"]
    assert "timer-wait" in types(x, i) and "timer-fire" in types(x, i)


def test_sleep_until_a_time_past_goes_on_at_once():
    def run(ctx):
        ctx.sleep_until(datetime(2000, 1, 1, tzinfo=UTC))
        return "on"

    x, i = started(invoice(run, durable=True))

    assert op(x, i, "charge").result == "on"


def test_a_naive_datetime_is_refused_with_a_clear_error():
    def run(ctx):
        ctx.sleep_until(datetime(2030, 1, 1))

    x, i = started(invoice(run, durable=True))

    assert "time zone" in op(x, i, "charge").error.message


def test_code_that_is_not_durable_sleeps_in_its_worker_and_may_not_wait():
    def run(ctx):
        ctx.sleep(0)  # as before: in the worker
        ctx.sleep_until(datetime(2030, 1, 1, tzinfo=UTC))

    x, i = started(invoice(run))

    assert "durable=True" in op(x, i, "charge").error.message


# -- signals ----------------------------------------------------------------------------


def paid_invoice(run, signal=None, **options) -> Workflow:
    return invoice(run, durable=True, signals=[
        Signal("paid", schema=PAID, correlate=lambda ctx: ctx.state.get("intent"),
               **(signal or {}))], **options)


def test_the_code_waits_for_its_signal_and_takes_the_payload():
    def run(ctx):
        return ctx.wait_for_signal("paid")["amount"]

    x, i = started(paid_invoice(run))
    waiting = x.snapshot(i).waiting
    assert (waiting.kind, waiting.name, waiting.operation) == ("signal", "paid", "charge")
    assert x.next(i).code is not None  # next does not jump the code's wait

    refused = x.signal(i, "paid", {"amount": 0})
    assert refused.code == "invalid_payload"
    assert op(x, i, "charge").status == "suspended"

    x.signal(i, "paid", {"amount": 12}, sender="7")

    assert op(x, i, "charge").result == 12
    assert x.snapshot(i).current_step == "done"
    signal = next(e for e in x.events if e.instance_id == i and e.type == "signal")
    assert (signal.data["operation"], signal.data["sender"]) == ("charge", "7")


def test_a_signal_kept_before_the_code_waits_is_taken_at_once():
    def run(ctx):
        return ctx.wait_for_signal("paid")

    x = started(paid_invoice(run), autorun=False)[0]
    x.keep_signal("paid", {"amount": 3}, correlation="pi_1")
    i = x.create("invoice", {"lines": [], "intent": "pi_1"})
    x.autorun = True
    x.start(i)

    assert op(x, i, "charge").result == {"amount": 3}


def test_a_signal_timeout_raises_in_the_code_which_may_catch_it():
    from django_workflows.engine import WaitTimedOut

    def run(ctx):
        try:
            return ctx.wait_for_signal("paid", timeout=60)
        except WaitTimedOut as error:
            return f"gave up: {error}"

    x, i = started(paid_invoice(run))
    x.advance(60)

    assert op(x, i, "charge").result == 'gave up: The signal "paid" did not come in time'


def test_on_timeout_continue_returns_none():
    def run(ctx):
        return ["none", ctx.wait_for_signal("paid")]

    x, i = started(paid_invoice(run, {"timeout": 30, "on_timeout": "continue"}))
    x.advance(30)

    assert op(x, i, "charge").result == ["none", None]


def test_an_undeclared_signal_fails_the_attempt_naming_it():
    def run(ctx):
        ctx.wait_for_signal("refunded")

    x, i = started(paid_invoice(run))

    assert 'declares no signal "refunded"' in op(x, i, "charge").error.message


def test_signals_need_durable_code_and_one_fan_out():
    with pytest.raises(DefinitionError, match="durable=True"):
        Operation("x", run=lambda ctx: None, signals=[Signal("paid")])
    with pytest.raises(DefinitionError, match="fan_out"):
        Workflow("w", steps=[
            Step("a", wait=Signal("paid", fan_out="first")),
            Step("b", operations=[Operation("x", run=lambda ctx: None, durable=True,
                                            signals=[Signal("paid")])])],
            transitions=[Transition("a", "b")])


# -- a person's answer ------------------------------------------------------------------


def test_ask_opens_a_task_and_its_decision_is_the_return_value():
    def run(ctx):
        decision = ctx.ask(Task(REVIEW, title="Approve the refund",
                                candidates=["group:managers"]))
        return "refunded" if decision["approve"] else "kept"

    x, i = started(invoice(run, durable=True))
    task = x.snapshot(i).task
    assert (task.title, task.operation, task.candidates) == (
        "Approve the refund", "charge", ("group:managers",))
    assert task.asked["form"] == REVIEW

    assert x.complete(i, input={"approve": "yes"}).code == "invalid_input"
    x.complete(i, input={"approve": True})

    assert op(x, i, "charge").result == "refunded"
    assert x.snapshot(i).task.status == "done"
    assert x.snapshot(i).current_step == "done"


# -- what reaches waiting code -------------------------------------------------------


def test_cancel_ends_the_wait_of_the_code():
    def run(ctx):
        ctx.sleep(3600)

    x, i = started(invoice(run, durable=True))
    x.cancel(i)

    assert op(x, i, "charge").status == "cancelled"
    assert x.snapshot(i).waiting is None
    assert x.deadlines == {}


def test_the_step_timeout_reaches_code_that_waits_for_a_person():
    def run(ctx):
        return ctx.ask(Task(REVIEW))

    wf = Workflow("invoice", steps=[
        Step("charge", timeout=600, operations=[Operation("charge", run=run, durable=True)])])
    x, i = started(wf)
    assert x.snapshot(i).task.is_open
    x.advance(600)

    assert op(x, i, "charge").status == "cancelled"
    assert x.snapshot(i).task.status == "cancelled"
    assert x.snapshot(i).status == "failed"


def test_a_rollback_ends_the_wait_and_runs_the_operation_s_rollback():
    undone = []

    def run(ctx):
        ctx.step("charge-1", lambda: "ch_1")
        return ctx.wait_for_signal("paid")

    wf = paid_invoice(run, rollback=lambda result, ctx: undone.append(result))
    x, i = started(wf)
    assert op(x, i, "charge").status == "suspended"

    x.rollback(i)

    assert undone == [None]  # what its steps did is undone, though it never returned
    assert x.snapshot(i).status == "idle"
    assert x.snapshot(i).waiting is None and x.deadlines == {}
    assert types(x, i)[-5:] == ["rollback", "operation-cancelled", "compensation-started",
                                "compensate", "rollback"]


def test_a_paused_instance_holds_the_timer_until_it_resumes():
    def run(ctx):
        ctx.sleep(60)
        return "woke"

    x, i = started(invoice(run, durable=True))
    x.pause(i)
    x.advance(120)
    assert op(x, i, "charge").status == "suspended"

    x.resume(i)

    assert op(x, i, "charge").result == "woke"


def test_an_interrupted_durable_attempt_is_retried_by_itself():
    charges = Charges()

    def run(ctx):
        ctx.step("charge-1", charges.charge, 1)
        return ctx.step("charge-2", charges.charge, 2)

    x, i = started(invoice(run, durable=True, retries=2), autorun=False)
    token = x.claim()
    x.journal.record(op(x, i, "charge").journal, JournalEntry(0, "charge-1", value="ch_1"))
    x.interrupt(token)  # the worker died after its first step

    assert op(x, i, "charge").status == "queued"
    assert x.snapshot(i).status == "running"
    x.run_pending()
    assert op(x, i, "charge").result == "ch_2"
    assert charges.made == [2]


# -- changing durable code ----------------------------------------------------------


def test_patched_keeps_a_run_from_before_a_change_on_its_old_path():
    made = []
    changed = [False]

    def run(ctx):
        if changed[0] and ctx.patched("one-charge-per-line"):
            for line in ctx.state["lines"]:
                ctx.step(f"charge-{line}", made.append, f"line {line}")
        else:
            ctx.step("charge-all", made.append, "all")
        ctx.sleep(60)
        return "done"

    x, old = started(invoice(run, durable=True))  # suspended in its sleep, before the change
    changed[0] = True  # a deploy: the code now charges each line
    new = x.create("invoice", {"lines": [1, 2]})
    x.start(new)
    x.advance(60)

    assert op(x, old, "charge").result == op(x, new, "charge").result == "done"
    assert made == ["all", "line 1", "line 2"]  # the old run did not charge again
    kinds = [e.kind for e in x.journal.entries(op(x, new, "charge").journal)]
    assert kinds == ["patch", "step", "step", "sleep"]


# -- operators ----------------------------------------------------------------------


def test_retry_of_a_failed_durable_operation_goes_on_from_the_step_that_failed():
    charges = Charges(fail_at={2})

    def run(ctx):
        return [ctx.step(f"charge-{line}", charges.charge, line) for line in ctx.state["lines"]]

    x, i = started(invoice(run))
    assert (op(x, i, "charge").status, x.snapshot(i).status) == ("failed", "failed")
    assert charges.made == [1]

    x.retry(i)

    assert op(x, i, "charge").result == ["ch_1", "ch_2", "ch_3"]
    assert charges.made == [1, 2, 3]


def test_back_ends_the_wait_and_the_step_entered_again_goes_on_from_its_journal():
    charges = Charges()

    def run(ctx):
        ctx.step("charge-1", charges.charge, 1)
        ctx.sleep(3600)
        return "slept"

    wf = Workflow("invoice", steps=[
        Step("cart"),
        Step("charge", operations=[Operation("charge", run=run, durable=True)])],
        transitions=[Transition("cart", "charge")])
    x, i = started(wf)
    x.next(i)
    first = op(x, i, "charge").journal
    assert op(x, i, "charge").status == "suspended"

    x.back(i)
    assert op(x, i, "charge").status == "cancelled"
    assert x.snapshot(i).waiting is None and x.deadlines == {}
    x.next(i)  # its unfinished work is handed out again, as a step's always is

    assert op(x, i, "charge").journal == first
    assert op(x, i, "charge").status == "suspended"  # in its sleep again, a new one
    assert charges.made == [1]
    x.advance(3600)
    assert op(x, i, "charge").result == "slept"


def test_a_rollback_starts_the_journal_anew():
    charges = Charges()

    def run(ctx):
        return ctx.step("charge-1", charges.charge, 1)

    x, i = started(invoice(run, durable=True, rollback=lambda result, ctx: None))
    first = op(x, i, "charge").journal
    x.rollback(i)
    x.start(i)

    assert op(x, i, "charge").journal != first
    assert charges.made == [1, 1]  # undone by the rollback, then charged by the new run


def test_a_pydantic_form_gives_the_code_a_model_instance():
    from pydantic import BaseModel

    class Review(BaseModel):
        approve: bool
        note: str = ""

    def run(ctx):
        decision = ctx.ask(Task(Review))
        return [type(decision).__name__, decision.approve, decision.note]

    x, i = started(invoice(run, durable=True))
    x.complete(i, input={"approve": False, "note": "too much"})

    assert op(x, i, "charge").result == ["Review", False, "too much"]


# -- async def ------------------------------------------------------------------------


def test_hooks_guards_and_branches_may_be_async():
    from django_workflows.engine import Branch

    seen = []

    async def enter(ctx):
        seen.append(f"enter {ctx.step}")

    async def branch(ctx):
        seen.append("branch")

    async def allowed(ctx):
        return True

    wf = Workflow("w", steps=[
        Step("a", enter=enter, when=allowed, advance="auto", parallel=[Branch("b", run=branch)]),
        Step("z")], transitions=[Transition("a", "z", when=allowed)])
    x, i = started(wf)

    assert seen == ["enter a", "branch"]
    assert x.snapshot(i).current_step == "z"


def test_async_durable_code_awaits_its_steps_and_waits():
    charges = Charges()

    async def charge_async(line):
        return charges.charge(line)

    async def run(ctx):
        first = await ctx.step("charge-1", charge_async, 1)
        second = await ctx.step("charge-2", charges.charge, 2)  # a plain function, in a thread
        await ctx.sleep(60)
        return [first, second, ctx.step == "charge"]

    x, i = started(invoice(run, durable=True))
    assert op(x, i, "charge").status == "suspended"
    x.advance(60)

    assert op(x, i, "charge").result == ["ch_1", "ch_2", True]
    assert charges.made == [1, 2]


def test_plain_durable_code_in_a_thread_with_a_running_event_loop_is_not_taken_for_async():
    """As under Jupyter or Playwright's sync API: the loop is there, the code is plain."""
    import asyncio

    charges = Charges()

    def run(ctx):
        return [ctx.step(f"charge-{line}", charges.charge, line) for line in (1, 2)]

    async def in_a_loop():
        return started(invoice(run, durable=True))

    x, i = asyncio.run(in_a_loop())

    assert op(x, i, "charge").result == ["ch_1", "ch_2"]
