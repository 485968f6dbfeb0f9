"""A quote in durable code whose recorded rate can go stale: what ``retry`` from a step of
its journal is for (the services', the API's and the admin's tests).

The rate comes from outside, as a ``Note`` "rate <n>" (the newest): a rate of 0 makes the
step "price" fail. A plain retry replays the journal's stale rate and fails again; a retry
from the step "rate" reads it anew. Each side effect writes a ``Note`` ("loaded", "read
rate <n>", "priced <n>"), so a test sees what ran and how often.
"""

from __future__ import annotations

from django_workflows import Operation, Step, Transition, Workflow, register

from .models import Note


def load() -> list[int]:
    Note.objects.create(text="loaded")
    return [1, 2]


def read_rate() -> int:
    newest = Note.objects.filter(text__startswith="rate ").order_by("-pk").first()
    rate = int(newest.text.split()[1]) if newest is not None else 0
    Note.objects.create(text=f"read rate {rate}")
    return rate


def price(rows: list[int], rate: int) -> int:
    if rate <= 0:
        raise RuntimeError(f"no price at rate {rate}")
    Note.objects.create(text=f"priced {sum(rows) * rate}")
    return sum(rows) * rate


def quote(ctx):
    rows = ctx.step("load", load)
    rate = ctx.step("rate", read_rate)
    return ctx.step("price", price, rows, rate)


durable_quote = register(Workflow(
    id="durable-quote", title="Quote",
    steps=[Step("quote", advance="auto", operations=[Operation(
        "quote", run=quote, durable=True, title="Price the quote")]), Step("done")],
    transitions=[Transition("quote", "done")]))
