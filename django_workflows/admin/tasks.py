"""The task inbox and the task page: people decide through a real form, never raw JSON.

The inbox lists what the user may act on, overdue first; the task page shows
the task, who took it and who decided, and the form made from its schema.
Claim, release and complete go through the service layer, which judges under
the instance's row lock whether the user is a candidate.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from .. import engine, registry, services
from ..engine.shown import Shown
from ..exceptions import Busy, NotAllowed, StaleRevision, WorkflowError, WorkflowNotMoved
from ..models import TaskStatus, WorkflowInstance, WorkflowTask
from ..reading import inbox
from ..reading.queries import form_of
from ..services.access import acting_on_tasks, visible_tasks
from .changelist import EstimatedCountPaginator, as_typed, search_instances
from .pages import change_url
from .storable_lookups import StorableLookupsAdmin
from .sweep_banner import SweepBanner
from .task_forms import form_for, input_from


def task_url(task_id: Any) -> str:
    return reverse("admin:django_workflows_workflowtask_change", args=[task_id])


def inbox_url() -> str:
    return reverse("admin:django_workflows_workflowtask_changelist")


class ScopeFilter(admin.SimpleListFilter):
    """Yours to do (the default), the ones you claimed, or every task you may see."""

    title = "show"
    parameter_name = "show"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("claimed", "Claimed by me"), ("all", "All tasks I may see")]

    def choices(self, changelist: Any) -> Any:
        yield {"selected": self.value() is None, "display": "To do",
               "query_string": changelist.get_query_string(remove=[self.parameter_name])}
        for value, label in self.lookup_choices:
            yield {"selected": self.value() == value, "display": label,
                   "query_string": changelist.get_query_string({self.parameter_name: value})}

    def queryset(self, request: Any, queryset: Any) -> Any:
        return queryset  # the admin's get_queryset reads the scope


@admin.register(WorkflowTask)
class WorkflowTaskAdmin(SweepBanner, StorableLookupsAdmin[WorkflowTask]):
    list_display = ("task_title", "workflow_title", "instance_link", "owner", "root_link",
                    "step", "due", "claimed_by", "status")
    list_display_links = ("task_title",)
    list_filter = (ScopeFilter, "status", "overdue")
    list_select_related = ("claimed_by",)  # the instances: inbox.with_roots
    search_fields = ("title",)  # the search box; get_search_results says what it finds
    search_help_text = ("An instance's reference or id (its own, or its root's: alice's "
                        "onboarding finds the tasks of its identity check), an owner's "
                        "username or email, a workflow's title, or part of a task's title.")
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = EstimatedCountPaginator
    sortable_by = ()
    actions = None

    class Media:
        css = {"all": ["django_workflows/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> Any:
        scope = request.GET.get(ScopeFilter.parameter_name)
        user = request.user
        if scope == "all":
            tasks = visible_tasks(user).order_by(*WorkflowTask.INBOX_ORDER)
        elif scope == "claimed":
            tasks = visible_tasks(user).filter(claimed_by=user, status=TaskStatus.OPEN) \
                .order_by(*WorkflowTask.INBOX_ORDER)
        else:
            tasks = acting_on_tasks(user)
        return inbox.with_roots(tasks).defer("input")

    def get_search_results(self, request: HttpRequest, queryset: Any,
                           search_term: str) -> tuple[Any, bool]:
        """The tasks of the instances the instance list's search finds (by id, reference,
        workflow or owner), and of the workflows nested in them, or with the term in their
        title."""
        term = as_typed(search_term)
        if not term:
            return queryset, False
        matching = search_instances(WorkflowInstance.objects.all(), term).values("pk")
        return queryset.filter(inbox.of_instances(matching) | Q(title__icontains=term)), False

    def get_ordering(self, request: HttpRequest) -> Any:
        return WorkflowTask.INBOX_ORDER  # overdue first, then the soonest due, then the oldest

    # Every staff user has an inbox: what is in it is what they may act on.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="task")
    def task_title(self, task: WorkflowTask) -> str:
        return task.title

    @admin.display(description="workflow")
    def workflow_title(self, task: WorkflowTask) -> str:
        definition = registry.find(task.workflow)
        return definition.title if definition and definition.title else task.workflow

    @admin.display(description="instance")
    def instance_link(self, task: WorkflowTask) -> str:
        return format_html('<a href="{}">{}</a>', change_url(task.instance_id),
                           task.instance.name)

    @admin.display(description="owner")
    def owner(self, task: WorkflowTask) -> str:
        return inbox.owner_name(task.instance) or "—"

    @admin.display(description="part of")
    def root_link(self, task: WorkflowTask) -> str:
        """The instance at the top: a child workflow's task is part of alice's onboarding."""
        root = inbox.root_of(task.instance)
        if root.pk == task.instance_id:
            return "—"
        definition = registry.find(root.workflow)
        title = definition.title if definition and definition.title else root.workflow
        return format_html('<a href="{}" class="dwf-task-root">{} {}</a>', change_url(root.pk),
                           title, root.name)

    @admin.display(description="due")
    def due(self, task: WorkflowTask) -> str:
        if task.due_at is None:
            return "—"
        when = timezone.localtime(task.due_at).strftime("%Y-%m-%d %H:%M")
        if task.overdue:
            return format_html('<span class="dwf-badge dwf-status-failed">overdue</span> {}',
                               when)
        return when

    # -- the task page ------------------------------------------------------------------

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        task = visible_tasks(request.user).select_related("instance", "claimed_by",
                                                          "completed_by").filter(
            pk=_uuid_or_none(unquote(object_id))).first()
        if task is None:
            self.message_user(request, "There is no such task, or it is not one you may see.",
                              messages.WARNING)
            return HttpResponseRedirect(inbox_url())
        schema = form_of(task)
        form_class = form_for(schema) if schema is not None else None
        form = None
        if request.method == "POST":
            verb = request.POST.get("_task", "")
            if verb == "complete" and form_class is not None:
                form = form_class(request.POST)
                if form.is_valid() and self._give(request, task, "complete", form):
                    return HttpResponseRedirect(request.get_full_path())
            elif verb in ("claim", "release"):
                self._give(request, task, verb)
                return HttpResponseRedirect(request.get_full_path())
        instance = task.instance
        found = services.applies(instance, user=request.user,
                                 commands=engine.TASK_COMMANDS.values()) \
            if task.status == TaskStatus.OPEN else {}
        if form is None and form_class is not None:
            form = form_class(initial=task.input or None)
        request.current_app = self.admin_site.name
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "title": task.title,
            "task": task, "instance": instance, "instance_url": change_url(instance.pk),
            "shows": [as_shown(line) for line in inbox.shown_for(task, instance, request.user)],
            "workflow_title": self.workflow_title(task),
            "owner_name": inbox.owner_name(instance), "root_link": self.root_link(task),
            "form": form, "revision": instance.revision,
            "media": self.media + form.media if form is not None else self.media,
            "can": {name: verdict.allowed for name, verdict in found.items()},
            "why_not": {name: verdict.message for name, verdict in found.items()
                        if not verdict.allowed},
            "inbox_url": inbox_url(), **(extra_context or {})}
        return TemplateResponse(request, "admin/django_workflows/workflowtask/task.html",
                                context)

    def _give(self, request: HttpRequest, task: WorkflowTask, verb: str,
              form: Any = None) -> bool:
        """Claim, release or complete as ``request.user``; False when refused (it says why)."""
        label = engine.TASK_COMMANDS[verb].label
        values = {"input": input_from(form)} if form is not None else {}
        try:
            revision = int(request.POST.get("revision") or 0) or None
        except ValueError:
            revision = None
        try:
            services.command(task.instance_id, verb, task=str(task.pk), user=request.user,
                             expected_revision=revision, **values)
        except WorkflowNotMoved as error:
            if form is not None and error.code in ("invalid_input", "validation_failed"):
                for field, message in field_messages(error):
                    form.add_error(field if field in form.fields else None, message)
                return False
            self.message_user(request, f"{label} refused: {error.reason}", messages.WARNING)
            return form is None
        except StaleRevision:
            self.message_user(request, f"{label} not done: the instance changed since the "
                                       "page was loaded. Look again, then retry.",
                              messages.WARNING)
            return False
        except (NotAllowed, Busy, WorkflowError) as error:
            self.message_user(request, f"{label} not done: {error}", messages.ERROR)
            return form is None
        self.message_user(request, f"{label}: done.", messages.SUCCESS)
        return True


# A value longer than this (a whole object of the state) is cut on the page.
LONGEST_SHOWN = 1000


def as_shown(line: Shown) -> dict[str, Any]:
    """A line the task page shows: its label, and its value as text (the template escapes
    both); a link only for an http(s) URL."""
    value = line.value
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, int | float):
        text = str(value)
    else:
        text = json.dumps(value, ensure_ascii=False)
    if len(text) > LONGEST_SHOWN:
        text = text[:LONGEST_SHOWN] + "…"
    return {"label": line.label, "text": text, "link": line.link, "problem": line.problem}


def field_messages(error: WorkflowNotMoved) -> list[tuple[str | None, str]]:
    """A refused input's messages by field: the form's own field errors, or a step's
    ``"field: message"`` (the convention the example's validate hooks follow)."""
    if error.field_errors:
        return [(problem.field or None, problem.message) for problem in error.field_errors]
    found: list[tuple[str | None, str]] = []
    for message in error.reason.split("; "):
        field, colon, text = message.partition(": ")
        found.append((field, text) if colon and field.isidentifier() else (None, message))
    return found


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
