"""The wizard page: a plain template whose JavaScript drives the onboarding through the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from .onboarding import DOCUMENT_TYPES, PLANS, onboarding


@login_required
@ensure_csrf_cookie
def wizard(request: HttpRequest) -> HttpResponse:
    return render(request, "shop/wizard.html", {
        "steps": [(step.id, step.title) for step in onboarding.steps],
        "plans": PLANS.items(),
        "document_types": DOCUMENT_TYPES.items(),
        "plans_json": PLANS,
    })
