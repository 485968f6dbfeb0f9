"""The invoice run: durable code that charges an invoice line by line, sleeps until the
invoice is due, and asks a manager what to do with the lines the bank declined.

A business customer's invoice (:class:`~.models.Invoice`) has lines, each charged on its own
to the card it names (the card of the customer's branch that ordered it). How many lines,
and which of them fail, is known only as it runs: the shape durable code is for
(docs/durable-code.md). One operation with ``durable=True`` does it all:

1. ``ctx.step("load", ...)`` reads the invoice and its lines from the database, once: a
   replay works on the lines as they were then.
2. ``ctx.step("charge-line-<n>", ...)`` charges each line at the payment provider
   (:mod:`.payments`), with an idempotency key per line and card: a worker that dies in
   the middle of a charge leaves no journal entry, and the next attempt's call finds the
   provider's first charge instead of making a second one (the docs' rule 4). A declined
   card is an outcome the step returns and the journal keeps, not an error.
3. ``ctx.sleep_until(<the due date>)``: the attempt ends and frees its worker; the sweep's
   timer wakes the code on the day (``SHOP_TIMES["INVOICE_DUE"]`` after the invoice was
   issued: two weeks in a shop, a minute in the demo).
4. When lines were declined, ``ctx.ask(Task(...))`` asks the managers: charge those lines
   again to another card, or write them off with a note. A retry whose card is declined
   again asks again. Nothing declined: nobody is asked.
5. The run returns what was charged and written off; each line's row says it too.

A charge the provider accepted counts as paid here: the provider's bank confirms it later
(:mod:`.bank`), and nothing in the run waits for that (the shop's webhook passes invoice
charges by, :mod:`.webhooks`). There is no ``rollback`` hook: a rollback resets the run,
and the run started again finds its charges at the provider by the same keys.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from django_workflows import Operation, OperationContext, Step, Task, Workflow, services
from django_workflows.models import WorkflowInstance

from . import payments
from .back_office import staff_only
from .models import Invoice, InvoiceLine

MERCHANT = "shop"
# The provider's reference of an invoice's charges (the shop's webhook knows them by it).
CHARGE_REFERENCE = "invoice:"
MANAGERS = ["group:managers"]

INVOICE_RUN_SCHEMA = {
    "type": "object", "required": ["invoice"], "additionalProperties": False,
    "properties": {"invoice": {"type": "string", "minLength": 1, "maxLength": 40,
                               "title": "Invoice"}},
}


def money(cents: int, currency: str) -> str:
    return f"{cents / 100:.2f} {currency}"


# -- the steps: each one's result is journaled, and a replay returns it -------------------


def load_invoice(number: str) -> dict[str, Any]:
    """The invoice and its lines, as JSON."""
    invoice = Invoice.objects.get(number=number)
    return {
        "number": invoice.number, "customer": invoice.customer, "currency": invoice.currency,
        "due_at": invoice.due_at.isoformat(),
        "lines": [{"id": line.pk, "position": line.position, "description": line.description,
                   "amount_cents": line.amount_cents, "payment_method": line.payment_method}
                  for line in invoice.lines.order_by("position")],
    }


def charge_key(run: str, line: dict[str, Any], payment_method: str) -> str:
    """One charge per line and card, whatever the attempts: every call sends this key."""
    return f"invoice-{run}-line-{line['id']}-{payment_method}"


def charge_line(run: str, invoice: dict[str, Any], line: dict[str, Any],
                payment_method: str) -> dict[str, Any]:
    """Charge ``line`` to ``payment_method``; its outcome, written on the line's row too.
    A provider that is unavailable or answers no more raises: the step tries again."""
    outcome: dict[str, Any] = {"line": line["id"], "position": line["position"],
                               "payment_method": payment_method}
    try:
        charge = payments.create_charge(
            amount_cents=line["amount_cents"], currency=invoice["currency"],
            payment_method=payment_method, reference=CHARGE_REFERENCE + invoice["number"],
            idempotency_key=charge_key(run, line, payment_method), merchant=MERCHANT)
    except payments.CardDeclined as declined:
        outcome.update(status=InvoiceLine.DECLINED, reason=str(declined))
        InvoiceLine.objects.filter(pk=line["id"]).update(status=InvoiceLine.DECLINED,
                                                         note=str(declined))
        return outcome
    outcome.update(status=InvoiceLine.CHARGED, charge=charge.id)
    InvoiceLine.objects.filter(pk=line["id"]).update(status=InvoiceLine.CHARGED,
                                                     charge=charge.id, note="")
    return outcome


def write_off(line_ids: list[int], note: str) -> list[int]:
    InvoiceLine.objects.filter(pk__in=line_ids).update(status=InvoiceLine.WRITTEN_OFF,
                                                       note=note)
    return line_ids


# -- what the manager is asked ------------------------------------------------------------


def declined_lines(invoice: dict[str, Any], declined: list[dict[str, Any]]) -> str:
    lines = {line["id"]: line for line in invoice["lines"]}
    return "; ".join(
        f"line {o['position']}, {lines[o['line']]['description']}, "
        f"{money(lines[o['line']]['amount_cents'], invoice['currency'])} to "
        f"{o['payment_method']}: {o['reason']}" for o in declined)


def decision_form(invoice: dict[str, Any], declined: list[dict[str, Any]]) -> dict[str, Any]:
    """The form of the managers' task; the declined lines are named in it."""
    return {
        "type": "object", "required": ["decision"], "additionalProperties": False,
        "properties": {
            "decision": {
                "title": "Decision",
                "description": f"Declined: {declined_lines(invoice, declined)}.",
                "oneOf": [{"const": "retry", "title": "Charge them again, to the card below"},
                          {"const": "write-off", "title": "Write them off"}]},
            "payment_method": {
                "type": "string", "minLength": 1, "maxLength": 60, "default": "pm_card_ok",
                "title": "Card to charge",
                "description": "For a retry: the card the customer gave instead (the "
                               "demo's provider takes pm_card_ok)."},
            "note": {"type": "string", "maxLength": 500, "title": "Note",
                     "description": "For a write-off: why. It is kept on the lines."},
        },
        "allOf": [
            {"if": {"properties": {"decision": {"const": "retry"}}},
             "then": {"required": ["payment_method"]}},
            {"if": {"properties": {"decision": {"const": "write-off"}}},
             "then": {"required": ["note"], "properties": {"note": {"minLength": 1}}}},
        ],
    }


def asked_about(invoice: dict[str, Any], declined: list[dict[str, Any]]) -> Task:
    count = f"{len(declined)} line{'s' if len(declined) > 1 else ''}"
    return Task(decision_form(invoice, declined), candidates=MANAGERS, show=["invoice"],
                title=f"Invoice {invoice['number']}: {count} declined")


# -- the durable code -----------------------------------------------------------------------


def run_invoice(ctx: OperationContext) -> dict[str, Any]:
    invoice = ctx.step("load", load_invoice, ctx.state["invoice"])
    outcomes = {line["id"]: ctx.step(f"charge-line-{line['position']}", charge_line,
                                     ctx.instance_id, invoice, line, line["payment_method"],
                                     retries=4, retry_delay=1)
                for line in invoice["lines"]}
    ctx.sleep_until(datetime.fromisoformat(invoice["due_at"]))
    lines = {line["id"]: line for line in invoice["lines"]}
    written_off: list[int] = []
    while declined := [o for o in outcomes.values() if o["status"] == InvoiceLine.DECLINED]:
        decision = ctx.ask(asked_about(invoice, declined))
        if decision["decision"] == "write-off":
            written_off = ctx.step("write-off", write_off, [o["line"] for o in declined],
                                   decision["note"])
            break
        for o in declined:
            line = lines[o["line"]]
            outcomes[line["id"]] = ctx.step(
                f"charge-line-{line['position']}-again", charge_line, ctx.instance_id,
                invoice, line, decision["payment_method"], retries=4, retry_delay=1)
    return {"invoice": invoice["number"],
            "charged": [o["position"] for o in outcomes.values()
                        if o["status"] == InvoiceLine.CHARGED],
            "written_off": [lines[i]["position"] for i in written_off]}


invoice_run = Workflow(
    id="invoice-run", title="Invoice run",
    permission=staff_only,  # the back office's: a customer does not charge an invoice
    initial={"invoice": ""},
    state_schema=INVOICE_RUN_SCHEMA,
    steps=[
        Step("charge", title="Charge the invoice", advance="auto", skippable=False,
             operations=[Operation(
                 "charge-invoice", title="Charge each line, then settle the declined ones",
                 run=run_invoice, durable=True,
                 description="Charges each line once (a journaled step), sleeps until the "
                             "invoice is due, then asks a manager about the declined lines.",
                 retries=3, retry_delay=5, backoff=2, timeout=60)]),
    ],
)


# -- issuing an invoice and starting its run ------------------------------------------------


def issue_invoice(number: str, customer: str, email: str, due_at: datetime,
                  lines: list[tuple[str, int, str]], currency: str = "EUR") -> Invoice:
    """A new invoice; ``lines`` are (description, amount in cents, payment method)."""
    with transaction.atomic():
        invoice = Invoice.objects.create(number=number, customer=customer, email=email,
                                         currency=currency, due_at=due_at)
        InvoiceLine.objects.bulk_create(
            InvoiceLine(invoice=invoice, position=position, description=description,
                        amount_cents=amount, payment_method=method)
            for position, (description, amount, method) in enumerate(lines, start=1))
    return invoice


def start_invoice_run(invoice: Invoice, user: Any = None) -> WorkflowInstance:
    """The run of ``invoice``, started: its number is the run's reference (one run each)."""
    return services.create("invoice-run", state={"invoice": invoice.number}, user=user,
                           reference=invoice.number, start=True)
