"""What the load test (bench/load.py) found, pinned down in the engine.

An order cancelled while its "reserve stock" branch was running: the branch
was told to stop, but it does not look at the cancel and finished its work
(the stock was reserved). Its result was discarded, and the rollback that
followed compensated succeeded branches only, so the reservation was never
released. A branch that finishes after being told to stop now counts as done
for the rollback, as a late compensation already did.
"""

from __future__ import annotations

from django_workflows.engine import Branch, Step
from tests.engine.helpers_work import Calls, chain, pending_token, started


def preparation(calls: Calls) -> object:
    return chain(Step("prepare", parallel=[
        Branch("reserve", run=calls.run("reserve"), compensate=calls.hook("release")),
        Branch("book", run=calls.run("book"), compensate=calls.hook("unbook"))]))


def test_a_branch_that_finishes_after_a_cancel_is_compensated_by_the_rollback() -> None:
    calls = Calls()
    x, instance = started(preparation(calls), autorun=False)
    reserve = x.claim(pending_token(x, "prepare:reserve"))  # a worker runs it ...
    x.cancel(instance)  # ... when the order is cancelled; "book" never ran
    x.finish(reserve)  # it did not look: the stock is reserved all the same
    assert calls == ["reserve"]
    branches = {b.id: (b.status, b.finished_late) for b in x.snapshot(instance).parallel}
    assert branches == {"reserve": ("cancelled", True), "book": ("cancelled", False)}

    x.rollback(instance)
    x.run_pending()

    assert calls == ["reserve", "release"]  # released; "book" never ran, nothing to undo
    assert x.snapshot(instance).status == "idle"


def test_a_branch_that_stops_when_told_is_not_compensated() -> None:
    calls = Calls()
    x, instance = started(preparation(calls), autorun=False)
    reserve = x.claim(pending_token(x, "prepare:reserve"))
    x.cancel(instance)
    x.interrupt(reserve)  # it stopped (its worker went away) without finishing

    x.rollback(instance)
    x.run_pending()

    assert calls == []
    assert x.snapshot(instance).status == "idle"
