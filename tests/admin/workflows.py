"""Workflows the admin tests drive; ``tests/admin/conftest.py`` registers them for each test.

* ``admin-fragile``: an import whose download fails the first time it runs for an
  instance and succeeds on a retry; then a manual review and a publish step.
* ``admin-slow``: an operation that reports progress tick by tick (the state sets
  ``ticks`` and ``tick`` seconds), for the moving progress bar.
* ``admin-guarded``: its own permission rule refuses users whose name starts with
  ``clerk``, whatever their model permissions.
* ``admin-undo``: steps with compensations, for rollback.
* ``admin-broken-rule``: its permission rule raises (which refuses).
* ``admin-payment``: a payment that ticks as ``admin-slow`` does, then a receipt; it
  completes on its own once the payment succeeded.
* ``admin-claim``: an expense claim whose exit guard refuses a cancel, with its reason,
  once the claim was paid out (a ``Note`` says so: no command of the instance's).
* ``admin-charge``: a card charge with retries and no delay, whose progress counts
  seconds (``metadata={"unit": "s"}``); its tests drive the attempts by hand.
* ``admin-shop-order``: an order as the docs' screenshots show it: its charge fails with a 503
  once and is tried again after a second, a manager decides it, two branches prepare it.
* ``admin-undated``: a single task with no due date.
* ``admin-review``: a check whose diagram has long details under a title and conditional
  transitions, one with a label and one named by its guard (for the diagram only).
"""

from __future__ import annotations

import time

from django_workflows import Branch, Operation, Step, Task, Transition, Workflow
from tests.testapp.models import Note
from tests.testapp.workflows import DECISION_FORM


def _download(ctx):
    Note.objects.create(text=f"download {ctx.instance_id}")
    ctx.progress(1, 4, "connecting")
    ctx.log("connecting to the feed")
    if Note.objects.filter(text=f"download {ctx.instance_id}").count() == 1:
        ctx.log("the feed answered 503")
        raise RuntimeError("feed unavailable (503)")
    ctx.progress(4, 4, "downloaded")
    ctx.log("downloaded 12 items")
    return {"items": 12}


def _count(ctx):
    ticks = ctx.state.get("ticks", 20)
    for tick in range(1, ticks + 1):
        ctx.check_cancelled()
        ctx.progress(tick, ticks, f"tick {tick}")
        ctx.log(f"tick {tick}")
        time.sleep(ctx.state.get("tick", 0.25))
    return {"ticks": ticks}


def _not_a_clerk(user, instance, action):
    return not getattr(user, "username", "").startswith("clerk")


def _undo(ctx):
    Note.objects.create(text=f"undo {ctx.instance_id}")


fragile = Workflow(
    id="admin-fragile", version=1, title="Import a feed",
    initial={"feed": "https://feeds.example/items"},
    steps=[Step("fetch", title="Fetch the feed", advance="auto",
                operations=[Operation("download", title="Download", run=_download)]),
           Step("review", title="Review"), Step("publish", title="Publish")],
    transitions=[Transition("fetch", "review"), Transition("review", "publish")],
)

slow = Workflow(
    id="admin-slow", version=1, title="Slow crunch",
    initial={"ticks": 20, "tick": 0.25},
    steps=[Step("crunch", title="Crunch numbers", advance="auto",
                operations=[Operation("count", title="Count", run=_count)]),
           Step("done")],
    transitions=[Transition("crunch", "done")],
)

guarded = Workflow(
    id="admin-guarded", version=1, title="Guarded by its own rule",
    steps=[Step("one"), Step("two")], transitions=[Transition("one", "two")],
    permission=_not_a_clerk,
)

undo = Workflow(
    id="admin-undo", version=1, title="Undone by compensations",
    steps=[Step("draft", compensate=_undo), Step("send", compensate=_undo), Step("sent")],
    transitions=[Transition("draft", "send"), Transition("send", "sent")],
)


def _broken_rule(user, instance, action):
    raise RuntimeError("the rule itself is broken")


broken_rule = Workflow(
    id="admin-broken-rule", version=1, title="With a rule that raises",
    steps=[Step("one"), Step("two")], transitions=[Transition("one", "two")],
    permission=_broken_rule,
)


payment = Workflow(
    id="admin-payment", version=1, title="Pay an order",
    initial={"ticks": 12, "tick": 0.25},
    steps=[Step("charge", title="Charge the card", advance="auto",
                operations=[Operation("pay", title="Payment", run=_count)]),
           Step("receipt", title="Send the receipt", advance="auto")],
    transitions=[Transition("charge", "receipt")],
)


def paid_out(ctx):
    return Note.objects.filter(text=f"paid {ctx.instance_id}").exists()


def _not_once_paid(ctx):
    return "Paid claims cannot be cancelled: refund it instead" if paid_out(ctx) else True


claim = Workflow(
    id="admin-claim", version=1, title="Expense claim",
    steps=[Step("submit", title="Submit the claim"), Step("pay", title="Pay it out")],
    transitions=[Transition("submit", "pay")],
    exit_guard=_not_once_paid,
)


def is_rejected(ctx):
    return ctx.state.get("decision") == "rejected"


review = Workflow(
    id="admin-review", version=1, title="Check a document",
    steps=[Step("document", title="Your document"),
           Step("review", title="Manual review", advance="auto", timeout=600,
                when=lambda ctx: True,
                operations=[Operation("scan", run=_count), Operation("compare", run=_count)]),
           Step("rejected", title="Rejected"), Step("approved", title="Approved")],
    transitions=[Transition("document", "review"),
                 Transition("review", "rejected", when=is_rejected),
                 Transition("review", "approved", when=lambda ctx: True,
                            label="approved by an operator")],
)


charge = Workflow(
    id="admin-charge", version=1, title="Charge an order",
    steps=[Step("charge", title="Charge the card", advance="auto",
                operations=[Operation("charge-card", title="Charge the card", run=_count,
                                      retries=3, metadata={"unit": "s"})]),
           Step("ship", title="Ship it")],
    transitions=[Transition("charge", "ship")],
)


def _charge_once_unavailable(ctx):
    for tick in range(1, 5):
        ctx.progress(tick * 0.3, 1.2, "The provider answers")
        time.sleep(0.3)
    if ctx.attempt == 1:
        raise RuntimeError("Payment provider unavailable (503)")
    return {"charge": "ch_1"}


def _prepare(ctx):
    time.sleep(0.4)


order = Workflow(
    id="admin-shop-order", version=1, title="An order",
    steps=[Step("charge", title="Charge the card", advance="auto",
                operations=[Operation("charge-card", title="Charge the card",
                                      run=_charge_once_unavailable, retries=2, retry_delay=1,
                                      metadata={"unit": "s"})]),
           Step("approve", title="A manager approves",
                task=Task(DECISION_FORM, candidates=["group:managers"])),
           Step("prepare", title="Prepare the parcel", advance="auto",
                parallel=[Branch("pick", run=_prepare), Branch("label", run=_prepare)]),
           Step("ship", title="Ship it")],
    transitions=[Transition("charge", "approve"), Transition("approve", "prepare"),
                 Transition("prepare", "ship")],
)


# A task with no due date: the page says so with nothing after its name.
undated = Workflow(
    id="admin-undated", version=1, title="A decision without a due date",
    steps=[Step("decide", title="Decide", task=Task(DECISION_FORM,
                                                    candidates=["group:managers"]))],
)


ALL = (fragile, slow, guarded, undo, broken_rule, payment, claim, review, charge, order,
       undated)
