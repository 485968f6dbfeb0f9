"""Customer onboarding: a wizard a new customer clicks through (``/wizard/``).

profile -> plan -> identity (a nested identity check with a manual review) -> confirm -> email

* ``profile`` is validated: the messages start with the field they are about
  (``"email: ..."``), so the wizard page shows each beside its field.
* ``plan`` applies only when the customer has no invite code: an invite names
  the plan, so the step is skipped (and recorded as skipped) for them.
* ``identity`` runs the ``identity-check`` workflow as a child instance; its
  ``review`` step is a task for the ``operators`` group: an operator decides
  through its form, and the customer cannot. The customer's ``next`` goes to
  the child first, so the wizard walks through it as one flow.
* ``confirm`` creates the :class:`~example_project.shop.models.Customer` when
  it is left; the row is written in the same transaction as the step.
* ``email`` emails the customer a signed link and waits for the signal
  ``email-confirmed``, which opening the link sends
  (:mod:`.email_confirmation`); the customer's address is then confirmed. A
  link not opened within ``SHOP_TIMES["EMAIL_LINK"]`` stops working, and the
  onboarding ends without it (``on_timeout="continue"``). A confirmation is of
  the address its link named: a customer who goes back and changes the address
  has the new one unconfirmed until its own link is opened.
"""

from __future__ import annotations

import re
from typing import Any

from django_workflows import HookContext, Signal, Step, Task, Transition, Workflow

from . import times
from .email_confirmation import EMAIL_CONFIRMED, mark_confirmed, send_link
from .models import Customer

PLANS = {"starter": "Starter (free)", "pro": "Pro", "team": "Team"}
DEFAULT_PLAN = "starter"
# Invite codes name the plan they come with.
INVITES = {"PARTNER-TEAM": "team", "FRIEND-PRO": "pro"}
DOCUMENT_TYPES = {"passport": "Passport", "id_card": "Identity card",
                  "driving_licence": "Driving licence"}

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
DOCUMENT_NUMBER = re.compile(r"^[A-Z0-9]{6,12}$")


def is_operator(user: Any) -> bool:
    return bool(user is not None and getattr(user, "is_staff", False))


# -- the identity check (a child workflow) ----------------------------------------------


def validate_document(ctx: HookContext) -> list[str]:
    errors = []
    if ctx.state.get("document_type") not in DOCUMENT_TYPES:
        errors.append("document_type: Choose the kind of document")
    if not DOCUMENT_NUMBER.match(ctx.state.get("document_number") or ""):
        errors.append("document_number: Enter the number as printed: 6 to 12 capital "
                      "letters and digits")
    return errors


REVIEW_FORM = {
    "type": "object", "required": ["decision"], "additionalProperties": False,
    "properties": {
        "decision": {"title": "Decision", "oneOf": [
            {"const": "approved", "title": "Approve the document"},
            {"const": "rejected", "title": "Reject the document"}]},
        "reason": {"type": "string", "maxLength": 500, "title": "Reason",
                   "description": "Why the document is rejected: the customer reads this."},
    },
}


def review_of(state: Any) -> dict[str, Any]:
    return state.get("review") or {}


def validate_review(ctx: HookContext) -> str | None:
    """A rejection says why (the operator's decision is the review task's input)."""
    review = review_of(ctx.state)
    if review.get("decision") == "rejected" and not (review.get("reason") or "").strip():
        return "reason: Say why the document is rejected"
    return None


class IdentityRejected(Exception):
    pass


def reject(ctx: HookContext) -> None:
    # Failing the check fails the onboarding's identity step with this message.
    raise IdentityRejected(f"Identity check rejected: {review_of(ctx.state).get('reason')}")


def identity_permission(user: Any, instance: Any, action: str) -> bool:
    """While an operator reviews the document, the customer may not change it."""
    if instance is None or instance.current_step != "review":
        return True
    return action != "update_state" or is_operator(user)


def decision_in_review(persisted: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept the operator's decision in the state; version 2 takes it as the
    review task's input, under ``review``."""
    state = persisted["state"]
    decision, reason = state.pop("decision", None), state.pop("reason", "")
    if decision is not None:
        state["review"] = {"decision": decision, "reason": reason}
    return persisted


def show_document(ctx: HookContext) -> list[tuple[str, Any]]:
    """What the operator reviews: the document as the customer entered it."""
    kind = ctx.state.get("document_type")
    return [("Document", DOCUMENT_TYPES.get(kind, kind)),
            ("Number", ctx.state.get("document_number") or "")]


identity_check = Workflow(
    id="identity-check", version=2, title="Identity check",
    initial={"document_type": "passport", "document_number": ""},
    state_schema={
        "type": "object",
        "properties": {
            "document_type": {"enum": list(DOCUMENT_TYPES)},
            "document_number": {"type": "string", "maxLength": 40},
            "review": {"type": "object"},
        },
    },
    migrate=decision_in_review,
    nested_only=True,  # it runs inside an onboarding, never on its own
    steps=[
        Step("document", title="Your document", validate=validate_document, skippable=False),
        # An operator decides, through the review task's form: the customer cannot.
        Step("review", title="Manual review", validate=validate_review, skippable=False,
             task=Task(REVIEW_FORM, title="Review an identity document",
                       candidates=["group:operators"], show=show_document)),
        Step("rejected", title="Rejected", advance="auto", enter=reject),
    ],
    transitions=[
        Transition("document", "review"),
        Transition("review", "rejected", label="rejected",
                   when=lambda ctx: review_of(ctx.state).get("decision") == "rejected"),
        # Approved: no transition from "review" holds, so the check completes.
    ],
    permission=identity_permission,
)


# -- the onboarding wizard --------------------------------------------------------------


def validate_profile(ctx: HookContext) -> list[str]:
    errors = []
    if not (ctx.state.get("name") or "").strip():
        errors.append("name: Enter your name")
    if not EMAIL.match(ctx.state.get("email") or ""):
        errors.append("email: Enter an email address such as ann@example.com")
    code = (ctx.state.get("invite_code") or "").strip().upper()
    if code and code not in INVITES:
        errors.append("invite_code: This invite code is not known; leave it empty if you "
                      "have none")
    return errors


def invited_plan(state: Any) -> str | None:
    return INVITES.get((state.get("invite_code") or "").strip().upper())


def chosen_plan(state: Any) -> str:
    return invited_plan(state) or state.get("plan") or DEFAULT_PLAN


def validate_plan(ctx: HookContext) -> str | None:
    if ctx.state.get("plan") not in PLANS:
        return "plan: Choose a plan, or skip this step to start on Starter"
    return None


def validate_confirmation(ctx: HookContext) -> str | None:
    return None if ctx.state.get("accept_terms") is True else \
        "accept_terms: Accept the terms to open your account"


def create_customer(ctx: HookContext) -> None:
    """The ``confirm`` step's ``leave``: the customer as the onboarding has them now (left
    again after going back, the row is updated)."""
    email = ctx.state["email"]
    # A confirmation is of the address its link named: another address is not confirmed.
    Customer.objects.filter(onboarding=ctx.instance_id).exclude(email=email).update(
        email_confirmed_at=None)
    Customer.objects.update_or_create(
        onboarding=ctx.instance_id,
        defaults={"name": ctx.state["name"].strip(), "email": email,
                  "plan": chosen_plan(ctx.state),
                  "user": ctx.user if getattr(ctx.user, "pk", None) else None})


onboarding = Workflow(
    id="onboarding", version=1, title="Customer onboarding",
    initial={"name": "", "email": "", "invite_code": "", "plan": None, "accept_terms": False},
    state_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 100},
            "email": {"type": "string", "maxLength": 254},
            "invite_code": {"type": "string", "maxLength": 40},
            "plan": {"enum": [None, *PLANS]},
            "accept_terms": {"type": "boolean"},
        },
    },
    steps=[
        Step("profile", title="Your details", validate=validate_profile, skippable=False),
        Step("plan", title="Your plan", when=lambda ctx: invited_plan(ctx.state) is None,
             validate=validate_plan),
        # Only the plan may be skipped (the wizard's button): the rest must be done.
        Step("identity", title="Identity check", nested=identity_check, advance="auto",
             skippable=False),
        Step("confirm", title="Confirm", validate=validate_confirmation,
             leave=create_customer, skippable=False),
        # Only opening the emailed link moves it on (the link is the proof); not a button.
        Step("email", title="Your email", enter=send_link, leave=mark_confirmed,
             skippable=False,
             wait=Signal("email-confirmed", schema=EMAIL_CONFIRMED, into="email_confirmation",
                         timeout=times.seconds("EMAIL_LINK"), on_timeout="continue")),
    ],
    transitions=[
        Transition("profile", "plan"),
        Transition("plan", "identity"),
        Transition("identity", "confirm"),
        Transition("confirm", "email"),
    ],
)
