"""What the sweep could not do, in the admin: the sweep failures' list, and the section of
an instance's page with its own.

An item of the sweep that raised (a deadline of a workflow a deploy removed, a version
without its migration...) is a ``SweepFailure`` row: tried again later, and set aside after
``SWEEP_RETRIES`` failures in a row (``services/sweep_items.py``). The rows are the
sweep's own record: nobody adds, edits or deletes one here. *Try again*, once the cause is
mended, goes through ``services.retry_set_aside``: the next sweep tries the items again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from .. import services
from ..conf import workflow_settings
from ..models import SweepFailure, WorkflowInstance
from ..services.sweep import sweep_health
from .storable_lookups import StorableLookupsAdmin
from .sweep_banner import Notice, SweepBanner, unswept_notice

SET_ASIDE, RETRYING = "set-aside", "retrying"  # the state filter's values (the banner links)


def when(moment: datetime | None) -> str:
    """A time to the second, in the current time zone, as a ``<time>`` element."""
    if moment is None:
        return "—"
    shown = timezone.localtime(moment)
    return format_html('<time datetime="{}" style="white-space: nowrap">{}</time>',
                       shown.isoformat(), shown.strftime("%Y-%m-%d %H:%M:%S"))


def state_of(failure: SweepFailure) -> str:
    """Set aside since when, or when the sweep tries it again."""
    if failure.set_aside:
        return format_html('<span class="dwf-sweep-failure-state" data-state="{}">Set aside '
                           "since {}</span>", SET_ASIDE, when(failure.quarantined_at))
    return format_html('<span class="dwf-sweep-failure-state" data-state="{}">Tried again at '
                       "{}</span>", RETRYING, when(failure.retry_at))


def tried_again(count: int, of_instance: bool = False) -> str:
    items = f"{count} item{'' if count == 1 else 's'}"
    return (f"The sweep tries {items}{' of this instance' if of_instance else ''} again on "
            "its next turn.")


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(SET_ASIDE, "Set aside"), (RETRYING, "Tried again later")]

    def queryset(self, request: Any, queryset: Any) -> Any:
        if self.value() in (SET_ASIDE, RETRYING):
            return queryset.filter(quarantined_at__isnull=self.value() == RETRYING)
        return queryset  # another value lists them all, as Django's own filters do


@admin.action(description="Try again", permissions=["change"])
def try_again(model_admin: SweepFailureAdmin, request: HttpRequest, queryset: Any) -> None:
    count = services.retry_set_aside(queryset)
    model_admin.message_user(request, tried_again(count), messages.SUCCESS)


@admin.register(SweepFailure)
class SweepFailureAdmin(SweepBanner, StorableLookupsAdmin[SweepFailure]):
    list_display = ("what", "state", "instance_link", "error_line", "failures",
                    "first_failed", "last_failed")
    list_display_links = ("what",)
    list_filter = ("kind", StateFilter)
    search_fields = ("key", "error")
    ordering = ("-failed_at",)
    actions = [try_again]
    fields = ("what", "state", "instance_link", "error_text", "failures", "first_failed",
              "last_failed")
    readonly_fields = fields

    class Media:
        css = {"all": ["django_workflows/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> Any:
        # Its instance's name and workflow, not its state.
        return super().get_queryset(request).select_related("instance").defer(
            "instance__state", "instance__snapshot")

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None
                        ) -> Any:
        # Django's "Select sweep failure to change": none is changed, some are tried again.
        return super().changelist_view(request, {"title": "Sweep failures",
                                                 **(extra_context or {})})

    def banner_notices(self, request: HttpRequest) -> list[Notice]:
        """Not the count of the failures: this list shows them."""
        notice = unswept_notice(sweep_health())
        return [notice] if notice else []

    # The sweep writes the rows: none is added, edited or deleted here (the change
    # permission runs Try again).
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request)

    # -- the columns ------------------------------------------------------------------

    @admin.display(description="what", ordering="kind")
    def what(self, failure: SweepFailure) -> str:
        return format_html('<span class="dwf-sweep-failure-what" style="white-space: nowrap">'
                           "{} {}</span>",
                           failure.get_kind_display(), failure.key)

    @admin.display(description="instance")
    def instance_link(self, failure: SweepFailure) -> str:
        instance = failure.instance
        if instance is None:
            return "—"
        return format_html('<a class="dwf-sweep-failure-instance" href="{}">{} {}</a>',
                           reverse("admin:django_workflows_workflowinstance_change",
                                   args=[instance.pk]), instance.workflow, instance.name)

    @admin.display(description="error")
    def error_line(self, failure: SweepFailure) -> str:
        return format_html('<span class="dwf-sweep-failure-error" title="{}">{}</span>',
                           failure.error, Truncator(failure.error).chars(200))

    @admin.display(description="error")
    def error_text(self, failure: SweepFailure) -> str:
        return format_html('<pre class="dwf-sweep-failure-error">{}</pre>', failure.error)

    @admin.display(description="first failed", ordering="first_failed_at")
    def first_failed(self, failure: SweepFailure) -> str:
        return when(failure.first_failed_at)

    @admin.display(description="last failed", ordering="failed_at")
    def last_failed(self, failure: SweepFailure) -> str:
        return when(failure.failed_at)

    @admin.display(description="state", ordering="quarantined_at")
    def state(self, failure: SweepFailure) -> str:
        return state_of(failure)


# -- an instance's page -------------------------------------------------------------------


def instance_failures_context(instance: WorkflowInstance, can_change: bool) -> dict[str, Any]:
    """The instance's sweep failures, each with its state as its page shows them (one read
    of their index)."""
    failures = [(failure, state_of(failure))
                for failure in instance.sweep_failures.order_by("-failed_at")]
    return {"sweep_failures": failures, "can_retry_sweep": can_change and bool(failures),
            "sweep_retries": workflow_settings.SWEEP_RETRIES}


def retry_instance_failures(model_admin: Any, request: HttpRequest,
                            instance: WorkflowInstance) -> None:
    """The page's *Try again* (``_retry_sweep``): the instance's own failures, for those who
    may change the instance."""
    if not model_admin.has_change_permission(request, instance):
        model_admin.message_user(request, "Not tried again: acting on this instance needs the "
                                          "permission to change workflow instances.",
                                 messages.ERROR)
        return
    count = services.retry_set_aside(instance.sweep_failures.all())
    if not count:
        model_admin.message_user(request, "Nothing to try again: the sweep has no failure of "
                                          "this instance now.", messages.INFO)
        return
    model_admin.log_change(request, instance, "Let the sweep try its failed items again.")
    model_admin.message_user(request, tried_again(count, of_instance=True), messages.SUCCESS)
