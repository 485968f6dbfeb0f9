"""Workflows the admin tests drive; ``tests/admin/conftest.py`` registers them for each test.

* ``admin-fragile``: an import whose download fails the first time it runs for an
  instance and succeeds on a retry; then a manual review and a publish step.
* ``admin-slow``: an operation that reports progress tick by tick (the state sets
  ``ticks`` and ``tick`` seconds), for the moving progress bar.
* ``admin-guarded``: its own permission rule refuses users whose name starts with
  ``clerk``, whatever their model permissions.
* ``admin-undo``: steps with compensations, for rollback.
* ``admin-broken-rule``: its permission rule raises (which refuses).
"""

from __future__ import annotations

import time

from django_workflows import Operation, Step, Transition, Workflow
from tests.testapp.models import Note


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


ALL = (fragile, slow, guarded, undo, broken_rule)
