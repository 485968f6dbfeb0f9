"""Retry from a step of an operation's journal, in the pure engine: the entries from that
position go, and the code runs those steps again; the steps before it answer from the
journal. And the refusals, each with its stable code."""

from __future__ import annotations

import pytest

from django_workflows.engine import (
    Operation,
    Retry,
    Signal,
    Step,
    Transition,
    Workflow,
    verdict,
)

from .helpers_work import op, started


class Quote:
    """A quote's code: load the rows, read the rate, price them. Which functions ran, in
    order, is the witness of what the journal answered."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.ran: list[str] = []

    def load(self) -> list[int]:
        self.ran.append("load")
        return [1, 2]

    def read_rate(self) -> int:
        self.ran.append("rate")
        return self.rate

    def price(self, rows: list[int], rate: int) -> int:
        self.ran.append("price")
        if rate <= 0:
            raise RuntimeError(f"no price at rate {rate}")
        return sum(rows) * rate

    def run(self, ctx) -> int:
        rows = ctx.step("load", self.load)
        rate = ctx.step("rate", self.read_rate)
        return ctx.step("price", self.price, rows, rate)


def quoting(run, **options) -> Workflow:
    return Workflow("quoting", steps=[
        Step("quote", advance="auto", operations=[Operation("quote", run=run, **options)]),
        Step("done")], transitions=[Transition("quote", "done")])


def failed_quote(rate: int = 0):
    quote = Quote(rate)
    x, i = started(quoting(quote.run))
    assert x.snapshot(i).status == "failed"
    return quote, x, i


def journal_of(x, i, operation="quote"):
    return [(e.position, e.name, e.value) for e in x.journal.entries(op(x, i, operation).journal)]


def test_retry_from_a_step_runs_it_and_the_steps_after_it_again_and_not_those_before():
    quote, x, i = failed_quote(rate=0)
    assert journal_of(x, i) == [(0, "load", [1, 2]), (1, "rate", 0)]

    quote.rate = 5  # the rate is mended; the journal still holds the stale one
    quote.ran.clear()
    x.retry(i, operation="quote", from_step=1)

    assert quote.ran == ["rate", "price"]  # load answered from the journal, not run again
    assert op(x, i, "quote").result == 15
    assert x.snapshot(i).current_step == "done"
    assert journal_of(x, i) == [(0, "load", [1, 2]), (1, "rate", 5), (2, "price", 15)]


def test_a_plain_retry_answers_the_recorded_steps_from_the_journal():
    quote, x, i = failed_quote(rate=0)
    quote.rate = 5
    quote.ran.clear()

    x.retry(i)

    assert quote.ran == ["price"]  # the stale rate came from the journal: it fails again
    assert x.snapshot(i).status == "failed"
    assert "no price at rate 0" in op(x, i, "quote").error.message


def test_retry_from_the_first_step_runs_the_whole_code_again():
    quote, x, i = failed_quote(rate=0)
    quote.rate = 2
    quote.ran.clear()

    x.retry(i, operation="quote", from_step=0)

    assert quote.ran == ["load", "rate", "price"]
    assert op(x, i, "quote").result == 6


def test_the_retry_event_says_which_entry_it_went_on_from():
    quote, x, i = failed_quote(rate=0)
    quote.rate = 1

    x.retry(i, operation="quote", from_step=1)

    retry = next(e for e in x.events_of(i) if e.type == "retry")
    assert retry.data == {"operation": "quote", "from_step": 1, "entries_deleted": 1}


def test_a_wait_after_the_entry_begins_again():
    ran = []

    def run(ctx):
        ctx.step("reserve", ran.append, "reserve")
        ctx.sleep(60)
        return ctx.step("confirm", confirm)

    def confirm():
        ran.append("confirm")
        if ran.count("confirm") == 1:
            raise RuntimeError("the partner said no")
        return "confirmed"

    x, i = started(quoting(run, durable=True))
    x.advance(60)
    assert x.snapshot(i).status == "failed"
    assert [e.kind for e in x.journal.entries(op(x, i, "quote").journal)] == ["step", "sleep"]

    x.retry(i, operation="quote", from_step=1)

    assert op(x, i, "quote").status == "suspended"  # in its sleep again, a new one
    assert x.snapshot(i).waiting.kind == "timer"
    x.advance(60)
    assert op(x, i, "quote").result == "confirmed"
    assert ran == ["reserve", "confirm", "confirm"]


def test_a_signal_among_the_entries_deleted_is_waited_for_again():
    confirmed = []

    def run(ctx):
        ctx.step("reserve", lambda: "r1")
        paid = ctx.wait_for_signal("paid")
        return ctx.step("confirm", confirm, paid["amount"])

    def confirm(amount):
        confirmed.append(amount)
        if len(confirmed) == 1:
            raise RuntimeError("the partner said no")
        return f"confirmed {amount}"

    x, i = started(quoting(run, durable=True, signals=[Signal("paid")]))
    x.signal(i, "paid", {"amount": 7})
    assert x.snapshot(i).status == "failed"

    x.retry(i, operation="quote", from_step=1)

    assert op(x, i, "quote").status == "suspended"  # the payload taken before is gone
    assert (x.snapshot(i).waiting.kind, x.snapshot(i).waiting.name) == ("signal", "paid")
    x.signal(i, "paid", {"amount": 9})
    assert op(x, i, "quote").result == "confirmed 9"
    assert confirmed == [7, 9]


def test_a_retry_from_an_entry_after_the_wait_keeps_the_signal_it_took():
    confirmed, noted = [], []

    def run(ctx):
        paid = ctx.wait_for_signal("paid")
        ctx.step("note", noted.append, paid["amount"])
        return ctx.step("confirm", confirm, paid["amount"])

    def confirm(amount):
        confirmed.append(amount)
        if len(confirmed) == 1:
            raise RuntimeError("the partner said no")
        return f"confirmed {amount}"

    x, i = started(quoting(run, durable=True, signals=[Signal("paid")]))
    x.signal(i, "paid", {"amount": 7})
    assert x.snapshot(i).status == "failed"

    x.retry(i, operation="quote", from_step=1)  # "note" and after; the signal stays

    assert op(x, i, "quote").result == "confirmed 7"
    assert (noted, confirmed) == ([7, 7], [7, 7])


def test_what_applies_now_asks_a_person_to_confirm_a_retry_from_a_step():
    _, x, i = failed_quote(rate=0)

    found = verdict(x.definitions["quoting"], x.snapshot(i), x.env(),
                    Retry(operation="quote", from_step=0))

    assert found.allowed
    assert found.confirm == ('Retry from entry 0 of the journal of operation "quote": its 2 '
                             "entries from there are deleted, and the code runs those steps "
                             "again")


# -- refusals ---------------------------------------------------------------------------


def refusal(outcome) -> tuple[str | None, str | None]:
    assert not outcome.moved
    return outcome.code, outcome.message


def test_a_position_alone_is_refused():
    _, x, i = failed_quote()
    code, message = refusal(x.retry(i, from_step=1))
    assert code == "retry_from_incomplete"
    assert "operation" in message and "from_step" in message


def test_an_operation_of_no_current_step_is_refused():
    _, x, i = failed_quote()
    assert refusal(x.retry(i, operation="ship", from_step=0)) == (
        "no_operation", 'Workflow step "quote" has no operation "ship"')


def test_a_position_the_journal_does_not_hold_is_refused():
    _, x, i = failed_quote()
    assert refusal(x.retry(i, operation="quote", from_step=2)) == (
        "no_journal_entry", 'The journal of operation "quote" has no entry at position 2: '
                            "it holds 2 (0 to 1)")
    assert refusal(x.retry(i, operation="quote", from_step=-1))[0] == "no_journal_entry"


def test_an_operation_that_journaled_nothing_is_refused():
    def run(ctx):
        raise RuntimeError("before any step")

    x, i = started(quoting(run))
    assert refusal(x.retry(i, operation="quote", from_step=0)) == (
        "no_journal", 'Operation "quote" has no journal: its code recorded no step to retry '
                      "from")


def test_an_operation_that_succeeded_is_refused():
    quote = Quote(rate=3)
    wf = Workflow("quoting", steps=[Step("quote", operations=[
        Operation("quote", run=quote.run)], validate=lambda ctx: "check the quote")])
    x, i = started(wf)
    x.validate(i)
    assert x.snapshot(i).status == "blocked"

    assert refusal(x.retry(i, operation="quote", from_step=1)) == (
        "operation_done", 'Operation "quote" succeeded: a retry does not run it again')


def test_an_operation_whose_code_still_waits_is_refused():
    def run(ctx):
        ctx.step("reserve", lambda: "r1")
        ctx.sleep(3600)

    wf = Workflow("quoting", steps=[Step("quote", operations=[
        Operation("quote", run=run, durable=True)], validate=lambda ctx: "not yet")])
    x, i = started(wf)
    x.validate(i)  # blocked, while the code sleeps
    assert op(x, i, "quote").status == "suspended"

    code, message = refusal(x.retry(i, operation="quote", from_step=0))
    assert code == "operation_in_flight"
    assert message.startswith('Operation "quote" is suspended')


@pytest.mark.parametrize("given", [{}, {"operation": "quote", "from_step": 0}])
def test_a_running_instance_refuses_any_retry_as_before(given):
    quote = Quote(rate=3)
    x, i = started(quoting(quote.run), autorun=False)
    assert refusal(x.retry(i, **given))[0] == "not_failed"


def test_a_refused_retry_from_a_step_deletes_nothing():
    _, x, i = failed_quote()
    before = journal_of(x, i)
    x.retry(i, operation="quote", from_step=7)
    assert journal_of(x, i) == before
