"""Expense approval: an employee claims, a manager decides, the money is paid back.

claim -> approval -> payout     (approved)
                  -> rejection  (rejected)

* The state must satisfy ``EXPENSE_SCHEMA`` (a JSON Schema): a state that
  breaks it is refused, naming the field, and nothing is stored.
* The ``exit_guard`` refuses to cancel a claim once it was approved: the
  money is on its way, so it must be paid out (or rolled back) instead.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.mail import send_mail

from django_workflows import HookContext, Operation, OperationContext, Step, Transition, Workflow

from .models import Reimbursement

RECEIPT_NEEDED_ABOVE = 25  # in the claim's currency

EXPENSE_SCHEMA = {
    "type": "object",
    "required": ["employee", "amount", "currency", "category", "description", "receipt",
                 "decision", "comment"],
    "additionalProperties": False,
    "properties": {
        "employee": {"type": "string", "maxLength": 150},
        "amount": {"type": "number", "minimum": 0, "maximum": 100000},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "category": {"enum": ["travel", "meals", "equipment", "other"]},
        "description": {"type": "string", "maxLength": 500},
        "receipt": {"type": ["string", "null"], "maxLength": 500},
        "decision": {"enum": [None, "approved", "rejected"]},
        "comment": {"type": "string", "maxLength": 500},
    },
}


def validate_claim(ctx: HookContext) -> list[str]:
    errors = []
    if not ctx.state["employee"]:
        errors.append("employee: Say who spent the money")
    if ctx.state["amount"] <= 0:
        errors.append("amount: Enter the amount spent")
    if not ctx.state["description"].strip():
        errors.append("description: Say what the money was spent on")
    if ctx.state["amount"] > RECEIPT_NEEDED_ABOVE and not ctx.state["receipt"]:
        errors.append(f"receipt: A receipt is needed above {RECEIPT_NEEDED_ABOVE}")
    return errors


def validate_approval(ctx: HookContext) -> list[str]:
    if ctx.user is not None and ctx.user.get_username() == ctx.state["employee"]:
        return ["You cannot decide on your own expense claim"]
    if ctx.state["decision"] is None:
        return ["decision: Approve or reject the claim"]
    if ctx.state["decision"] == "rejected" and not ctx.state["comment"].strip():
        return ["comment: Say why the claim is rejected"]
    return []


def is_approved(ctx: HookContext) -> bool:
    return ctx.state["decision"] == "approved"


def refuse_cancel_once_approved(ctx: HookContext) -> bool:
    return not is_approved(ctx)


def to_cents(amount: float) -> int:
    return int((Decimal(str(amount)) * 100).to_integral_value())


def reimburse(ctx: OperationContext) -> dict[str, Any]:
    payment, created = Reimbursement.objects.get_or_create(
        expense=ctx.instance_id,
        defaults={"employee": ctx.state["employee"], "amount_cents": to_cents(ctx.state["amount"]),
                  "currency": ctx.state["currency"]})
    ctx.log(f"{'Paid' if created else 'Already paid'} {payment}")
    return {"reimbursement": payment.pk}


def tell_rejection(ctx: OperationContext) -> None:
    send_mail("Your expense claim was rejected", ctx.state["comment"], "expenses@example.com",
              [f"{ctx.state['employee']}@example.com"])


expense_approval = Workflow(
    id="expense-approval", version=1, title="Expense approval",
    initial={"employee": "", "amount": 0, "currency": "EUR", "category": "other",
             "description": "", "receipt": None, "decision": None, "comment": ""},
    state_schema=EXPENSE_SCHEMA,
    exit_guard=refuse_cancel_once_approved,
    steps=[
        Step("claim", title="Claim", validate=validate_claim),
        Step("approval", title="Manager's decision", validate=validate_approval),
        Step("payout", title="Pay back", advance="auto",
             operations=[Operation("reimburse", title="Pay the employee back", run=reimburse,
                                   retries=3, retry_delay=60, backoff=2)]),
        Step("rejection", title="Tell the employee", advance="auto",
             operations=[Operation("email-rejection", title="Email the employee",
                                   run=tell_rejection, retries=3, retry_delay=60)]),
    ],
    transitions=[
        Transition("claim", "approval"),
        Transition("approval", "payout", when=is_approved),
        Transition("approval", "rejection"),
    ],
)
