"""Expense approval: an employee claims, a manager decides, the money is paid back.

claim -> approval -> payout     (approved)
                  -> rejection  (rejected)

* The state must satisfy ``EXPENSE_SCHEMA`` (a JSON Schema): a state that
  breaks it is refused, naming the field, and nothing is stored.
* ``approval`` is a task for the ``managers`` group: a manager decides through
  its form, never on their own claim (``exclude_owner``), and after two days
  the ``directors`` may too. The decision is recorded with who made it.
* The ``exit_guard`` refuses to cancel a claim once it was approved, saying why:
  the money is on its way, so it must be paid out (or rolled back) instead.
* Each new claim is numbered ``E-2026-0001`` and on, a sequence per year, as its
  ``reference`` (:mod:`.claim_references`).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.core.mail import send_mail

from django_workflows import (
    HookContext,
    Operation,
    OperationContext,
    Step,
    Task,
    Transition,
    Workflow,
)

from .models import Reimbursement

RECEIPT_NEEDED_ABOVE = 25  # in the claim's currency

EXPENSE_SCHEMA = {
    "type": "object",
    "required": ["employee", "amount", "currency", "category", "description", "receipt"],
    "additionalProperties": False,
    "properties": {
        "employee": {"type": "string", "maxLength": 150},
        "amount": {"type": "number", "minimum": 0, "maximum": 100000},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "category": {"enum": ["travel", "meals", "equipment", "other"]},
        "description": {"type": "string", "maxLength": 500},
        "receipt": {"type": ["string", "null"], "maxLength": 500},
        "approval": {"type": "object"},  # the manager's decision: the approval task's input
    },
}

DECISION_FORM = {
    "type": "object", "required": ["decision"], "additionalProperties": False,
    "properties": {
        "decision": {"title": "Decision", "oneOf": [
            {"const": "approved", "title": "Approve: pay it back"},
            {"const": "rejected", "title": "Reject it"}]},
        "comment": {"type": "string", "maxLength": 500, "title": "Comment",
                    "description": "Why it is rejected: the employee is told."},
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


def approval_of(state: Any) -> dict[str, Any]:
    return state.get("approval") or {}


def validate_approval(ctx: HookContext) -> list[str]:
    """A rejection says why (the decision itself is the approval task's input)."""
    approval = approval_of(ctx.state)
    if approval.get("decision") == "rejected" and not (approval.get("comment") or "").strip():
        return ["comment: Say why the claim is rejected"]
    return []


def is_approved(ctx: HookContext) -> bool:
    return approval_of(ctx.state).get("decision") == "approved"


def refuse_cancel_once_approved(ctx: HookContext) -> bool | str:
    if is_approved(ctx):
        return "This claim was approved and is being paid back: roll it back instead"
    return True


def claim_permission(user: Any, instance: Any, action: str) -> bool:
    """The claimant edits the claim while it is a draft; after that only staff change it."""
    if action != "update_state" or instance is None or getattr(user, "is_staff", False):
        return True
    return instance.current_step in ("", "claim")


def decision_in_approval(persisted: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept the decision in the state; version 2 takes it as the task's input."""
    state = persisted["state"]
    decision, comment = state.pop("decision", None), state.pop("comment", "")
    if decision is not None:
        state["approval"] = {"decision": decision, "comment": comment}
    return persisted


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
    send_mail("Your expense claim was rejected", approval_of(ctx.state).get("comment", ""),
              "expenses@example.com", [f"{ctx.state['employee']}@example.com"])


expense_approval = Workflow(
    id="expense-approval", version=2, title="Expense approval",
    initial={"employee": "", "amount": 0, "currency": "EUR", "category": "other",
             "description": "", "receipt": None},
    state_schema=EXPENSE_SCHEMA,
    migrate=decision_in_approval,
    exit_guard=refuse_cancel_once_approved,
    permission=claim_permission,
    reopen_completed=False,  # a paid claim is not reopened by one click on Back
    steps=[
        Step("claim", title="Claim", validate=validate_claim),
        # A manager decides, and never on their own claim; after two days, directors too.
        Step("approval", title="Manager's decision", validate=validate_approval,
             skippable=False,
             task=Task(DECISION_FORM, title="Decide on an expense claim",
                       candidates=["group:managers"], exclude_owner=True,
                       due=timedelta(days=2), escalate_to=["group:directors"],
                       show=["employee", "amount", "currency", "category", "description",
                             "receipt"])),
        Step("payout", title="Pay back", advance="auto",
             operations=[Operation("reimburse", title="Pay the employee back", run=reimburse,
                                   retries=3, retry_delay=60, backoff=2)]),
        Step("rejection", title="Tell the employee", advance="auto",
             operations=[Operation("email-rejection", title="Email the employee",
                                   run=tell_rejection, retries=3, retry_delay=60)]),
    ],
    transitions=[
        Transition("claim", "approval"),
        Transition("approval", "payout", when=is_approved, label="approved"),
        Transition("approval", "rejection", label="rejected"),
    ],
)
