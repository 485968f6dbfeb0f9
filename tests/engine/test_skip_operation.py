"""``skip_operation``: an operation that has not started can be skipped (SEED-RULES O-11)."""

from __future__ import annotations

from django_workflows.engine import Operation, SkipOperation, Step

from .helpers_work import Calls, chain, op, started, types


def two_operations(calls: Calls):
    return chain(Step("work", advance="auto", operations=[
        Operation("first", run=calls.run("first")), Operation("second", run=calls.run("second"))]),
        Step("done"))


def test_a_queued_operation_is_skipped_and_never_runs():
    calls = Calls()
    x, i = started(two_operations(calls), autorun=False)

    outcome = x.command(i, SkipOperation("first"))
    x.run_pending()

    assert outcome.moved
    assert op(x, i, "first").status == "skipped"
    assert calls == ["second"]
    assert x.snapshot(i).current_step == "done"
    assert "operation-skipped" in types(x, i)


def test_without_an_id_the_operation_that_would_run_next_is_skipped():
    calls = Calls()
    x, i = started(two_operations(calls), autorun=False)

    x.command(i, SkipOperation())

    assert op(x, i, "first").status == "skipped"


def test_an_operation_not_yet_handed_out_can_be_skipped_ahead():
    calls = Calls()
    x, i = started(two_operations(calls), autorun=False)

    x.command(i, SkipOperation("second"))
    x.run_pending()

    assert calls == ["first"]
    assert op(x, i, "second").status == "skipped"
    assert x.snapshot(i).current_step == "done"


def test_a_running_operation_cannot_be_skipped():
    x, i = started(two_operations(Calls()), autorun=False)
    x.claim()

    outcome = x.command(i, SkipOperation("first"))

    assert (outcome.moved, outcome.code, outcome.message) == (
        False, "operation_started", "Only idle or queued operations can be skipped")


def test_an_unknown_operation_is_refused_naming_it():
    x, i = started(two_operations(Calls()), autorun=False)

    outcome = x.command(i, SkipOperation("third"))

    assert (outcome.code, outcome.message) == (
        "no_operation", 'Workflow step "work" has no operation "third"')


def test_a_skipped_operation_is_not_rolled_back():
    calls = Calls()
    definition = chain(Step("work", advance="auto", operations=[
        Operation("first", run=calls.run("first"), rollback=calls.rollback("undo first")),
        Operation("second", run=calls.run("second"), rollback=calls.rollback("undo second"))]),
        Step("done"))
    x, i = started(definition, autorun=False)
    x.command(i, SkipOperation("first"))
    x.run_pending()

    x.rollback(i)
    x.run_pending()

    assert x.snapshot(i).status == "idle"
    assert calls == ["second", ("undo second", None)]  # the skipped one is not undone
