"""A warning on the admin's pages when work waits for a sweep and none ran lately.

Without a sweep nothing times out, no retry delay ends and no lost work is
recovered; the page says so (as the system check W030 does at startup) instead of
leaving instances stuck without a word.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.safestring import mark_safe

from ..services.sweep import sweep_health

HINT = ("Start <code>manage.py qcluster</code> (its workers sweep by themselves), or run "
        "<code>manage.py workflows_sweep --loop</code> where django-q2 is not used.")


def sweep_warning() -> str | None:
    """The banner's text, or None while sweeps run (or nothing waits for one)."""
    health = sweep_health()
    if not health.stuck:
        return None
    since = (f"since {timezone.localtime(health.swept_at):%Y-%m-%d %H:%M:%S}"
             if health.swept_at else "yet")
    many = f"{health.overdue}{'+' if health.overdue >= 100 else ''}"
    return (f"No sweep has run {since}, and {many} deadlines or queued attempts are overdue: "
            f"nothing times out and no retry delay ends. {HINT}")


class SweepBanner:
    """Admin mixin: the warning on the changelist (GET only: a polled or posted page would
    keep the message for a later one)."""

    def _warn_if_unswept(self, request: HttpRequest) -> None:
        if request.method != "GET":
            return
        text = sweep_warning()
        if text:
            messages.warning(request, mark_safe(text))  # our own text; no user input in it

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None
                        ) -> HttpResponse:
        self._warn_if_unswept(request)
        return super().changelist_view(request, extra_context)  # type: ignore[misc]
