"""Workflows of durable code, for the service tests and the real workers' tests.

Each side effect writes a ``Note`` ("charged <line> by <pid>"): the notes are the
side-effect journal a test reads to see that a step ran once. The state steers
the code (``lines``, ``crash_after``: a line after which the worker kills itself,
once), and so does the note "deployed" the test writes (the reordered code's new
version), so a worker process needs no memory shared with the test.
"""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta

from django.db import connection

from django_workflows import Operation, Signal, Step, Task, Transition, Workflow, register

from .models import Note

REVIEW = {"type": "object", "required": ["approve"],
          "properties": {"approve": {"type": "boolean"}, "note": {"type": "string"}}}
PAID = {"type": "object", "required": ["amount"],
        "properties": {"amount": {"type": "integer", "minimum": 1}}}


def charge(line: int) -> str:
    Note.objects.create(text=f"charged {line} by {os.getpid()}")
    return f"ch_{line}"


def crash_once_after(line: int, crash_after: int | None) -> None:
    """After line ``crash_after``'s step, the first time: the worker kills itself."""
    if line == crash_after and not Note.objects.filter(text="crashed").exists():
        Note.objects.create(text="crashed")
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies between two steps


def charge_lines(ctx):
    charged = []
    for line in ctx.state["lines"]:
        charged.append(ctx.step(f"charge-{line}", charge, line))
        crash_once_after(line, ctx.state.get("crash_after"))
    return charged


def billing(ctx):
    """Charge each line, sleep until the payment is due, wait for it, ask about it."""
    charged = [ctx.step(f"charge-{line}", charge, line) for line in ctx.state["lines"]]
    ctx.sleep(timedelta(seconds=ctx.state.get("due_in", 0)))
    paid = ctx.wait_for_signal("paid")
    decision = ctx.ask(Task(REVIEW, title="Review the invoice", candidates=["group:managers"],
                            show=["lines"]))
    return {"charged": charged, "paid": paid["amount"], "approved": decision["approve"]}


def charge_and_close(line: int) -> str:
    """``charge`` in a thread of its own, which closes its database connection after."""
    try:
        return charge(line)
    finally:
        connection.close()


async def acharge(line: int) -> str:
    await asyncio.sleep(0)
    return await asyncio.to_thread(charge_and_close, line)


async def abilling(ctx):
    """The same, as ``async def``."""
    charged = [await ctx.step(f"charge-{line}", acharge, line) for line in ctx.state["lines"]]
    await ctx.sleep(ctx.state.get("due_in", 0))
    paid = await ctx.wait_for_signal("paid")
    decision = await ctx.ask(Task(REVIEW, title="Review the invoice",
                                  candidates=["group:managers"]))
    return {"charged": charged, "paid": paid["amount"], "approved": decision["approve"]}


async def acharge_lines(ctx):
    """``charge_lines`` as ``async def``."""
    charged = []
    for line in ctx.state["lines"]:
        charged.append(await ctx.step(f"charge-{line}", acharge, line))
        await asyncio.to_thread(crash_once_after, line, ctx.state.get("crash_after"))
    return charged


def did(what: str) -> str:
    Note.objects.create(text=f"{what} by {os.getpid()}")
    return what


def deployed() -> bool:
    """Whether the test "deployed" the code's new version (a Note says so)."""
    return Note.objects.filter(text="deployed").exists()


def reordered(ctx):
    """Steps "load" then "charge", then a wait for the signal "go". Once the test has
    "deployed" the version that charges first, the replay of a run from before asks for
    "charge" where the journal holds "load": a ReplayMismatch. With state ``guarded``,
    that version guards its change with ``ctx.patched``, as docs/durable-code.md says."""
    new = deployed() and (ctx.patched("charge-first") if ctx.state.get("guarded") else True)
    done = [ctx.step(name, did, name) for name in (["charge", "load"] if new
                                                   else ["load", "charge"])]
    ctx.wait_for_signal("go")
    return done


async def areordered(ctx):
    """``reordered`` as ``async def``."""
    new = await asyncio.to_thread(deployed) and (
        await ctx.patched("charge-first") if ctx.state.get("guarded") else True)
    done = [await ctx.step(name, did, name) for name in (["charge", "load"] if new
                                                         else ["load", "charge"])]
    await ctx.wait_for_signal("go")
    return done


def _charges(workflow_id: str, run) -> Workflow:
    return Workflow(
        id=workflow_id, initial={"lines": [1, 2, 3, 4], "crash_after": None},
        steps=[Step("charge", advance="auto", operations=[Operation(
            "charge", run=run, durable=True, retries=2)]), Step("done")],
        transitions=[Transition("charge", "done")])


def _reorder(workflow_id: str, run) -> Workflow:
    return Workflow(
        id=workflow_id, initial={"guarded": False},
        steps=[Step("work", advance="auto", operations=[Operation(
            "work", run=run, durable=True, retries=2, signals=[Signal("go")])]),
               Step("done")],
        transitions=[Transition("work", "done")])


def _billing(workflow_id: str, run) -> Workflow:
    return Workflow(
        id=workflow_id, initial={"lines": [1, 2, 3], "intent": "", "due_in": 0},
        steps=[Step("bill", advance="auto", operations=[Operation(
            "bill", run=run, durable=True, retries=2, signals=[
                Signal("paid", schema=PAID, correlate=lambda ctx: ctx.state["intent"] or None,
                       senders=["group:payment-bots"])])]),
               Step("done")],
        transitions=[Transition("bill", "done")])


durable_charges = register(_charges("durable-charges", charge_lines))
async_charges = register(_charges("async-charges", acharge_lines))
durable_reorder = register(_reorder("durable-reorder", reordered))
async_reorder = register(_reorder("async-reorder", areordered))
durable_billing = register(_billing("durable-billing", billing))
async_billing = register(_billing("async-billing", abilling))
