"""The schedules in the admin: every registered schedule, when it ran and runs next, the
instances it made, and pause/resume as buttons and bulk actions.

Schedules are declared in code: the rows cannot be added, edited or deleted here. Pause
and resume go through the service layer (``services.pause_schedule``), which judges the
user (the schedule model's change permission).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode

from .. import registry, services
from ..engine.schedules import Schedule
from ..exceptions import WorkflowError
from ..models import WorkflowSchedule
from ..services.schedules import may_pause, runs_of, sync_schedules
from .storable_lookups import StorableLookupsAdmin
from .sweep_banner import SweepBanner

CHANGELIST = "admin:django_workflows_workflowschedule_changelist"


def runs_url(schedule: Schedule) -> str:
    """The instances changelist of the schedule's runs (``runs_of``: of its workflow, their
    references starting ``"<id>@"``)."""
    return (reverse("admin:django_workflows_workflowinstance_changelist") + "?"
            + urlencode({"workflow": schedule.workflow_id,
                         "reference__startswith": f"{schedule.id}@"}))


def _when(moment: Any) -> str:
    if not moment:
        return "—"
    return format_html('<span style="white-space: nowrap">{}</span>',
                       timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S"))


def _set_paused(request: HttpRequest, schedule_ids: list[str], paused: bool) -> int:
    """Pause (or resume) each schedule as ``request.user``; how many it did (it says why
    for the others)."""
    verb = "Pause" if paused else "Resume"
    done = 0
    for schedule_id in schedule_ids:
        try:
            if paused:
                services.pause_schedule(schedule_id, user=request.user)
            else:
                services.resume_schedule(schedule_id, user=request.user)
        except (WorkflowError, LookupError) as error:
            messages.error(request, f'{verb} "{schedule_id}" not done: {error}')
        else:
            done += 1
    return done


@admin.action(description="Pause the selected schedules", permissions=["change"])
def pause_selected(model_admin: WorkflowScheduleAdmin, request: HttpRequest,
                   queryset: Any) -> None:
    done = _set_paused(request, list(queryset.values_list("pk", flat=True)), True)
    if done:
        model_admin.message_user(request, f"Paused {done} schedule(s).", messages.SUCCESS)


@admin.action(description="Resume the selected schedules", permissions=["change"])
def resume_selected(model_admin: WorkflowScheduleAdmin, request: HttpRequest,
                    queryset: Any) -> None:
    done = _set_paused(request, list(queryset.values_list("pk", flat=True)), False)
    if done:
        model_admin.message_user(request, f"Resumed {done} schedule(s): each runs from its "
                                          "next due time on.", messages.SUCCESS)


@admin.register(WorkflowSchedule)
class WorkflowScheduleAdmin(SweepBanner, StorableLookupsAdmin[WorkflowSchedule]):
    list_display = ("id", "workflow_title", "timing", "state_badge", "buttons", "last_due",
                    "next_due", "runs", "skipped_count")
    list_display_links = ("id",)
    list_filter = ("paused",)
    ordering = ("id",)
    actions = [pause_selected, resume_selected]
    fields = ("id", "workflow_title", "timing", "options", "state_badge",
              "last_due", "last_run_link", "next_due", "runs", "skipped_count", "last_skipped",
              "updated_at")
    readonly_fields = fields
    change_form_template = "admin/django_workflows/workflowschedule/change_form.html"

    class Media:
        css = {"all": ["django_workflows/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> Any:
        """The rows of the registered schedules (a row of one no longer declared is kept
        but not shown)."""
        ids = [schedule.id for schedule in registry.all_schedules()]
        return super().get_queryset(request).filter(pk__in=ids).select_related("last_run")

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        return shown if may_pause(request.user) else [c for c in shown if c != "buttons"]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None
                        ) -> HttpResponse:
        sync_schedules()  # a schedule the sweep has not seen yet is listed too
        return super().changelist_view(request, extra_context)

    # The code declares schedules: no row is added or deleted here, and none edited (the
    # change permission pauses and resumes them).
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request)

    def get_urls(self) -> list[Any]:
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/pause/", wrap(self.pause_view),
                 name="%s_%s_pause" % info),  # noqa: UP031 - Django's own URL names
            path("<path:object_id>/resume/", wrap(self.resume_view),
                 name="%s_%s_resume" % info),  # noqa: UP031
            *super().get_urls(),
        ]

    # -- the columns ------------------------------------------------------------------

    @admin.display(description="workflow")
    def workflow_title(self, row: WorkflowSchedule) -> str:
        schedule = registry.find_schedule(row.pk)
        if schedule is None:
            return "—"
        definition = registry.find(schedule.workflow_id)
        return definition.title if definition and definition.title else schedule.workflow_id

    @admin.display(description="when")
    def timing(self, row: WorkflowSchedule) -> str:
        schedule = registry.find_schedule(row.pk)
        if schedule is None:
            return "—"
        if schedule.cron is not None:
            return format_html('<code style="white-space: nowrap">{}</code> ({})', schedule.cron,
                               schedule.timezone)
        return f"every {schedule.every_seconds} s"

    @admin.display(description="options")
    def options(self, row: WorkflowSchedule) -> str:
        schedule = registry.find_schedule(row.pk)
        if schedule is None:
            return "—"
        return (f"start={schedule.start}, overlap={schedule.overlap}, "
                f"catch_up={schedule.catch_up}")

    @admin.display(description="state")
    def state_badge(self, row: WorkflowSchedule) -> str:
        if row.paused:
            return format_html('<span class="dwf-badge dwf-status-blocked dwf-schedule-state">'
                               "{}</span>", "Paused")
        return format_html('<span class="dwf-badge dwf-status-running dwf-schedule-state">'
                           "{}</span>", "Active")

    @admin.display(description="last due")
    def last_due(self, row: WorkflowSchedule) -> str:
        return _when(row.last_due_at)

    @admin.display(description="next due")
    def next_due(self, row: WorkflowSchedule) -> str:
        return "— (paused)" if row.paused else _when(row.next_due_at)

    @admin.display(description="skipped")
    def skipped_count(self, row: WorkflowSchedule) -> int:
        """Due times skipped while the last run was unfinished (overlap="skip")."""
        return row.skipped

    @admin.display(description="last skipped")
    def last_skipped(self, row: WorkflowSchedule) -> str:
        return _when(row.last_skipped_at)

    @admin.display(description="last run")
    def last_run_link(self, row: WorkflowSchedule) -> str:
        if row.last_run is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse(
            "admin:django_workflows_workflowinstance_change", args=[row.last_run_id]),
            row.last_run.name)

    @admin.display(description="runs")
    def runs(self, row: WorkflowSchedule) -> str:
        schedule = registry.find_schedule(row.pk)
        if schedule is None:
            return "—"
        count = runs_of(schedule.id).count()
        return format_html('<a class="dwf-schedule-runs" href="{}">{} run{}</a>',
                           runs_url(schedule), count, "" if count == 1 else "s")

    @admin.display(description="")
    def buttons(self, row: WorkflowSchedule) -> str:
        """Pause or resume: a button of the changelist's own form (its CSRF token)."""
        verb = "resume" if row.paused else "pause"
        url = reverse(f"admin:django_workflows_workflowschedule_{verb}", args=[row.pk])
        return format_html('<button type="submit" class="button dwf-schedule-{}" '
                           'formaction="{}" name="_back" value="list">{}</button>',
                           verb, url, verb.capitalize())

    # -- the schedule's page and its buttons ------------------------------------------------

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_or_change_permission(request):  # before the id is read
            raise PermissionDenied
        sync_schedules()
        row = self.get_object(request, unquote(object_id))
        context = {**(extra_context or {}), "dwf_schedule": row,
                   "dwf_may_pause": may_pause(request.user) and row is not None}
        if row is not None:
            verb = "resume" if row.paused else "pause"
            context["dwf_verb"] = verb
            context["dwf_action_url"] = reverse(
                f"admin:django_workflows_workflowschedule_{verb}", args=[row.pk])
        return super().change_view(request, object_id, form_url, context)

    def pause_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._pause_or_resume(request, unquote(object_id), True)

    def resume_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._pause_or_resume(request, unquote(object_id), False)

    def _pause_or_resume(self, request: HttpRequest, schedule_id: str,
                         paused: bool) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseRedirect(reverse(CHANGELIST))
        if not self.has_change_permission(request):
            raise PermissionDenied
        if _set_paused(request, [schedule_id], paused):
            self.message_user(request, f'Schedule "{schedule_id}" '
                                       f'{"paused" if paused else "resumed"}.', messages.SUCCESS)
        if request.POST.get("_back") == "list" or registry.find_schedule(schedule_id) is None:
            return HttpResponseRedirect(reverse(CHANGELIST))
        return HttpResponseRedirect(reverse("admin:django_workflows_workflowschedule_change",
                                            args=[schedule_id]))

