"""The banner above the admin's lists: what the sweep does not do.

Without a sweep nothing times out, no retry delay ends and no lost work is recovered;
the page says so (as the system check W030 does at startup) instead of leaving
instances stuck without a word. And an item the sweep could not do (a deadline of a
workflow a deploy removed...) is counted, set aside or still tried again, with a link to
the sweep failures (``admin/sweep_failures.py``) for those who may see them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.auth import get_permission_codename
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from ..conf import workflow_settings
from ..models import SweepFailure
from ..services.sweep import SweepHealth, sweep_health

HINT = ("Start <code>manage.py qcluster</code> (its workers sweep by themselves), or run "
        "<code>manage.py workflows_sweep --loop</code> where django-q2 is not used.")


@dataclass(frozen=True)
class Notice:
    """One line of the banner: a message's level and its HTML (our own words and numbers)."""

    level: int
    html: str

    @property
    def tag(self) -> str:
        return "warning" if self.level == messages.WARNING else "info"


def unswept_notice(health: SweepHealth) -> Notice | None:
    """No sweep lately while work waits for one; None while sweeps run (or nothing waits)."""
    if not health.stuck:
        return None
    since = (f"since {timezone.localtime(health.swept_at):%Y-%m-%d %H:%M:%S}"
             if health.swept_at else "yet")
    return Notice(messages.WARNING, (
        f"No sweep has run {since}, and {_many(health.overdue)} deadlines or queued attempts "
        f"are overdue: nothing times out and no retry delay ends. {HINT}"))


def may_see_failures(user: Any) -> bool:
    opts = SweepFailure._meta
    return any(user.has_perm(f"{opts.app_label}.{get_permission_codename(action, opts)}")
               for action in ("view", "change"))


def _many(n: int) -> str:
    """A count of sweep_health's, which stops at 100."""
    return f"{n}{'+' if n >= 100 else ''}"


def _items(n: int) -> str:
    return f"{_many(n)} item{'' if n == 1 else 's'}"


def _link(user: Any, state: str) -> str:
    if not may_see_failures(user):
        return ""
    return format_html(' <a class="dwf-sweep-failures-link" href="{}?state={}">See the sweep '
                       "failures</a>.", reverse("admin:django_workflows_sweepfailure_changelist"),
                       state)


def failures_notice(health: SweepHealth, user: Any) -> Notice | None:
    """Items the sweep set aside (a warning: they wait for someone), or else items it
    still tries again (for information: most mend themselves or are set aside soon)."""
    if health.set_aside:
        one = health.set_aside == 1
        more = health.retrying
        return Notice(messages.WARNING, (
            f"The sweep set aside {_items(health.set_aside)} that kept failing: "
            f"{'it waits' if one else 'they wait'}, nothing lost, until someone tries "
            f"{'it' if one else 'them'} again.{_link(user, 'set-aside')}"
            + (f" {_items(more)} more {'is' if more == 1 else 'are'} failing and tried again "
               "shortly." if more else "")))
    if health.retrying:
        one = health.retrying == 1
        return Notice(messages.INFO, (
            f"The sweep could not do {_items(health.retrying)}: {'it is' if one else 'they are'}"
            f" tried again shortly, and set aside after {workflow_settings.SWEEP_RETRIES} "
            f"failures in a row.{_link(user, 'retrying')}"))
    return None


def sweep_notices(user: Any) -> list[Notice]:
    """What the banner says to ``user`` now (nothing while all is well)."""
    health = sweep_health()
    found = [unswept_notice(health), failures_notice(health, user)]
    return [notice for notice in found if notice is not None]


if TYPE_CHECKING:  # a mixin of ModelAdmin (before it in a class's bases)
    from django.contrib.admin import ModelAdmin

    _ModelAdmin = ModelAdmin[Any]
else:
    _ModelAdmin = object


class SweepBanner(_ModelAdmin):
    """Admin mixin: the banner on the changelist, as messages (GET only: a polled or posted
    page would keep the message for a later one)."""

    def banner_notices(self, request: HttpRequest) -> list[Notice]:
        return sweep_notices(request.user)

    def _warn_if_unswept(self, request: HttpRequest) -> None:
        if request.method != "GET":
            return
        for notice in self.banner_notices(request):
            # Our own text and numbers; no user input in it.
            messages.add_message(request, notice.level, mark_safe(notice.html))

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None
                        ) -> HttpResponse:
        self._warn_if_unswept(request)
        return super().changelist_view(request, extra_context)
