"""The shop's pages: the home page, the onboarding wizard, and the tour's live cases."""

from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from django_workflows.exceptions import NotAllowed, WorkflowNotMoved
from django_workflows.models import WorkflowInstance

from . import tour
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


def admin_link(instance: WorkflowInstance, text: str) -> str:
    url = reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])
    return format_html('<a href="{}">{}</a>', url, text)


@require_POST
@login_required
def start_live_cases(request: HttpRequest) -> HttpResponse:
    """Back-office staff start the tour's live cases again (a slow order, a failing order,
    a claim to approve), so the tour can be taken twice."""
    if not request.user.is_staff:
        raise PermissionDenied("Only back-office staff start the tour's live cases.")
    try:
        cases = tour.start_live_cases(request.user)
    except (tour.DemoUsersMissing, NotAllowed, WorkflowNotMoved) as error:
        messages.error(request, str(error))
        return redirect("home")
    slow, failing = cases.slow_order, cases.failing_order
    messages.success(request, format_html(
        "Started the tour's live cases: {} (its bank takes a while: watch its payment), "
        "{} (no courier for Iceland: it fails, roll it back) and {} (decide it from "
        '<a href="{}">your tasks</a>).',
        admin_link(slow, f"order {slow.reference}"),
        admin_link(failing, f"order {failing.reference}"),
        admin_link(cases.claim, "bob's expense claim"),
        reverse("admin:django_workflows_workflowtask_changelist")))
    return redirect("home")
