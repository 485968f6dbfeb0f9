"""The shop's pages: the home page, the onboarding wizard, the email confirmation link, and
the tour's live cases."""

from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from django_workflows.exceptions import (
    Busy,
    InstanceNotFound,
    NotAllowed,
    WorkflowError,
    WorkflowNotMoved,
)
from django_workflows.models import WorkflowInstance

from . import email_confirmation, times, tour
from .onboarding import DOCUMENT_TYPES, PLANS, onboarding

FAVICON = Path(__file__).resolve().parent / "static" / "shop" / "favicon.svg"


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "shop/home.html")


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for on every page (the admin's too)."""
    return HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")


@login_required
@ensure_csrf_cookie
def wizard(request: HttpRequest) -> HttpResponse:
    return render(request, "shop/wizard.html", {
        "steps": [(step.id, step.title) for step in onboarding.steps],
        "plans": PLANS.items(),
        "document_types": DOCUMENT_TYPES.items(),
        "plans_json": PLANS,
    })


@never_cache
@require_http_methods(["GET", "POST"])
def confirm_email(request: HttpRequest, token: str) -> HttpResponse:
    """The link emailed by the onboarding: a page asking to confirm, and its button, which
    sends the signal ``email-confirmed`` (:mod:`.email_confirmation`). A forged, altered or
    expired link, or one whose onboarding is gone or finished, is a page that says so."""
    def page(outcome: str, status: int = 200, problem: str = "",
             email: str = "") -> HttpResponse:
        return render(request, "shop/email_confirm.html",
                      {"outcome": outcome, "problem": problem, "email": email}, status=status)

    try:
        link = email_confirmation.read_link(token)
    except signing.SignatureExpired:
        hours = times.seconds("EMAIL_LINK") / 3600
        return page("expired", 410, f"This link has expired: a confirmation link works for "
                                    f"{hours:g} hours.")
    except signing.BadSignature:
        return page("invalid", 400, "This link is not one we sent: check that you opened it "
                                    "whole, as it is in the email.")
    email = link["email"]
    if request.method == "GET":
        return page("ask", email=email)
    try:
        sent = email_confirmation.confirm(token, link)
    except InstanceNotFound:
        return page("unknown", 404, "We know no application this link is for any more.",
                    email)
    except Busy:
        return page("busy", 503, "We could not record it just now: try again in a moment.",
                    email)
    except WorkflowNotMoved as refusal:
        if email_confirmation.is_confirmed(link):
            return page("already", email=email)
        return page(refusal.code, 409, "Your application is finished: this link confirms "
                                       "nothing any more.", email)
    except WorkflowError as error:  # refused otherwise: said, never a server error
        return page("refused", 400, f"This link could not be used: {error}", email)
    if sent.repeated and email_confirmation.is_confirmed(link):  # a second click
        return page("already", email=email)
    return page("confirmed", email=email)


def admin_link(instance: WorkflowInstance, text: str) -> str:
    url = reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])
    return format_html('<a href="{}">{}</a>', url, text)


@require_POST
@login_required
def start_live_cases(request: HttpRequest) -> HttpResponse:
    """Back-office staff start the tour's live cases again (a slow order, a failing order,
    a declined order, a claim to approve), so the tour can be taken twice."""
    if not request.user.is_staff:
        raise PermissionDenied("Only back-office staff start the tour's live cases.")
    try:
        cases = tour.start_live_cases(request.user)
    except (tour.DemoUsersMissing, NotAllowed, WorkflowNotMoved) as error:
        messages.error(request, str(error))
        return redirect("home")
    slow, failing, declined = cases.slow_order, cases.failing_order, cases.declined_order
    messages.success(request, format_html(
        "Started the tour's live cases: {} (it waits for its bank's webhook: watch it move "
        "on by itself), {} (no courier for Iceland: it fails, roll it back), {} (its card "
        "is declined: a reminder's timer fires) and {} (decide it from "
        '<a href="{}">your tasks</a>).',
        admin_link(slow, f"order {slow.reference}"),
        admin_link(failing, f"order {failing.reference}"),
        admin_link(declined, f"order {declined.reference}"),
        admin_link(cases.claim, "bob's expense claim"),
        reverse("admin:django_workflows_workflowtask_changelist")))
    return redirect("home")
