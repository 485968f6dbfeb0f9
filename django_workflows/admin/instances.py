"""The workflow instances admin: a fast changelist, an instance page, commands as actions.

Nothing here writes a row itself: commands, state updates and new instances
go through :mod:`django_workflows.services`, and there is no form over the
engine's fields.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from .. import engine, registry, services
from ..exceptions import InvalidState, NotAllowed, StaleRevision, StateTooLarge, WorkflowError
from ..models import WorkflowEvent, WorkflowInstance
from .bulk import bulk_action
from .changelist import (
    CurrentStepFilter,
    EstimatedCountPaginator,
    InstanceChangeList,
    OwnerFilter,
    WaitingFilter,
    WorkflowFilter,
    search_instances,
)
from .commands import buttons, journal_buttons, operation_buttons, run_command, verdicts
from .forms import (
    CreateInstanceForm,
    StateForm,
    pretty_json,
    state_errors,
    unread_create_form,
    unread_state_form,
)
from .instance_waiting import SignalForm, send_signal, waiting_context
from .journals import live_journals, positions_of, with_buttons
from .pages import (
    change_url,
    definitions_context,
    instance_context,
    live_parts,
    live_payload,
    live_timeline,
    workflow_url,
)
from .recovery import recovery_context, status_badge
from .request_limits import csrf_protect_within_limits, post_limit_problem
from .storable_lookups import StorableLookupsAdmin
from .sweep_banner import SweepBanner
from .sweep_failures import instance_failures_context, retry_instance_failures
from .workflow_page import period_of, workflow_page_context


@admin.register(WorkflowInstance)
class WorkflowInstanceAdmin(SweepBanner, StorableLookupsAdmin[WorkflowInstance]):
    list_display = ("short_id", "reference", "workflow_title", "status_badge",
                    "current_step_title", "owner", "revision", "updated_at")
    list_display_links = ("short_id",)
    list_filter = (WorkflowFilter, ("status", admin.ChoicesFieldListFilter), CurrentStepFilter,
                   WaitingFilter, OwnerFilter)
    search_fields = ("id", "reference", "owner__username")  # the box; see get_search_results
    search_help_text = ("An instance id or its start, as the list shows it (paste it, "
                        "ellipsis and all); a reference or its start; part of a workflow's "
                        "title; or part of an owner's username or email.")
    date_hierarchy = "updated_at"
    ordering = ("-updated_at",)
    sortable_by = ("updated_at",)  # the indexed ordering only: no sort of the whole table
    list_select_related = ("owner",)
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = EstimatedCountPaginator
    # Not the conventional name, which every admin of this model would pick up.
    change_list_template = "admin/django_workflows/workflowinstance/instances_change_list.html"

    class Media:
        css = {"all": ["django_workflows/admin.css"]}

    # A bulk action per declared command that needs nothing but the instance (those that
    # undo work ask first: bulk.py), made with the class from the commands declared then.
    actions = [bulk_action(name, declared.label) for name, declared in engine.ACTIONS.items()
               if not any(taken.required for taken in declared.inputs())]

    # -- the changelist ---------------------------------------------------------------

    @admin.display(description="instance")
    def short_id(self, instance: WorkflowInstance) -> str:
        return format_html('<span class="dwf-id" title="{}">{}…</span>', instance.pk,
                           str(instance.pk)[:8])

    @admin.display(description="workflow")
    def workflow_title(self, instance: WorkflowInstance) -> str:
        definition = registry.find(instance.workflow)
        return definition.title if definition and definition.title else instance.workflow

    @admin.display(description="status")
    def status_badge(self, instance: WorkflowInstance) -> str:
        # "Rolled back": idle again by a rollback, not a row that never started; the page
        # says the same (recovery.status_shown).
        return status_badge(instance)

    @admin.display(description="current step")
    def current_step_title(self, instance: WorkflowInstance) -> str:
        definition = registry.find(instance.workflow)
        step = definition.steps_by_id.get(instance.current_step) if definition else None
        return step.title if step and step.title else instance.current_step

    def changelist_view(self, request: HttpRequest,
                        extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The list, with a link to the workflow's page when it is filtered by one."""
        chosen = request.GET.get(WorkflowFilter.parameter_name)
        if chosen and registry.find(chosen) is not None:
            extra_context = {"workflow_page_url": workflow_url(chosen), **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type:
        return InstanceChangeList

    def get_search_results(self, request: HttpRequest, queryset: Any,
                           search_term: str) -> tuple[Any, bool]:
        return search_instances(queryset, search_term), False

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        """A nested child goes with its parent, never alone: alone, it is "protected"."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Events cannot be deleted one by one, but they go with their instance.
        perms_needed.discard(WorkflowEvent._meta.verbose_name)
        chosen = {obj.pk for obj in objs}
        protected = [*protected, *(
            f"{obj} is nested in instance {obj.parent_id}: delete that one instead"
            for obj in objs if obj.parent_id and obj.parent_id not in chosen)]
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: WorkflowInstance) -> None:
        services.delete(obj, user=request.user)  # the tree's lock first, then the rows

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for instance in queryset.filter(parent__isnull=True).only("pk"):
            services.delete(instance, user=request.user)

    def get_urls(self) -> list[Any]:
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view
        return [
            path("definitions/", wrap(self.definitions_view),
                 name="{}_{}_definitions".format(*info)),
            path("definitions/<path:workflow_id>/", wrap(self.workflow_view),
                 name="{}_{}_workflow".format(*info)),
            path("<path:object_id>/live/", wrap(self.live_view), name="{}_{}_live".format(*info)),
            *super().get_urls(),
        ]

    # -- pages ------------------------------------------------------------------------

    def _context(self, request: HttpRequest, **values: Any) -> dict[str, Any]:
        request.current_app = self.admin_site.name
        return {**self.admin_site.each_context(request), "opts": self.opts,
                "app_label": self.opts.app_label, "media": self.media, **values}

    @csrf_protect_within_limits  # a post too large to read gets the form, not a bare 400
    def add_view(self, request: HttpRequest, form_url: str = "",
                 extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """A new instance through ``services.create``: workflow, initial state, start."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        unreadable = post_limit_problem(request)
        if unreadable:
            form = unread_create_form(unreadable)
        else:
            form = CreateInstanceForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            instance = self._create(request, form)
            if instance is not None:
                return HttpResponseRedirect(change_url(instance.pk))
        context = self._context(request, title="Add workflow instance", form=form,
                                add=True, **(extra_context or {}))
        return TemplateResponse(request, "admin/django_workflows/workflowinstance/add_form.html",
                                context)

    def _create(self, request: HttpRequest, form: CreateInstanceForm) -> WorkflowInstance | None:
        workflow = form.cleaned_data["workflow"]
        try:
            instance = services.create(workflow, state=form.cleaned_data["state"],
                                       user=request.user, start=form.cleaned_data["start"])
        except NotAllowed as error:
            form.add_error(None, str(error))
            return None
        except (InvalidState, StateTooLarge) as error:
            form.add_error("state", state_errors(error))
            return None
        except WorkflowError as error:
            form.add_error(None, str(error))
            return None
        self.log_addition(request, instance, "Created through the service layer.")
        self.message_user(request, f"Created {instance.workflow} instance {instance.pk}; it is "
                                   f"{instance.get_status_display().lower()}.", messages.SUCCESS)
        return instance

    @csrf_protect_within_limits  # a post too large to read gets the form, not a bare 400
    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The instance page; its forms post commands (``_command``), a state (``_state``),
        the signal it waits for (``_signal``) or *Try again* of its sweep failures
        (``_retry_sweep``)."""
        instance = self.get_object(request, unquote(object_id))
        if instance is None:  # Django's own page's answer: no such object
            return super().change_view(request, object_id, form_url, extra_context)
        if not self.has_view_or_change_permission(request, instance):
            raise PermissionDenied
        state_form = None
        if request.method == "POST":
            unreadable = post_limit_problem(request)  # too large to read: change nothing
            if not unreadable and "_command" in request.POST:
                self._command(request, instance)
                return HttpResponseRedirect(request.get_full_path())
            if not unreadable and "_retry_sweep" in request.POST:
                retry_instance_failures(self, request, instance)
                return HttpResponseRedirect(request.get_full_path())
            if not unreadable and "_signal" in request.POST:
                signal_form = SignalForm(request.POST)
                if send_signal(self, request, instance, signal_form):
                    return HttpResponseRedirect(request.get_full_path())
                return self._instance_page(request, instance, None, extra_context,
                                           signal_form=signal_form)
            if not unreadable and "_state" not in request.POST:
                return HttpResponseRedirect(request.get_full_path())
            # The page shows no state form where update_state does not apply, so neither
            # could it show the form's errors: the page's messages say why instead.
            verdict = verdicts(self, request, instance)["update_state"]
            if not verdict.allowed:
                self.message_user(request, f"State not saved: {unreadable or verdict.message}",
                                  messages.ERROR)
                if not unreadable:
                    return HttpResponseRedirect(request.get_full_path())
            elif unreadable:  # only a state is that large: say so on its form
                state_form = unread_state_form(instance.state, instance.revision, unreadable)
            else:
                state_form = StateForm(request.POST)
                if self._save_state(request, instance, state_form):
                    return HttpResponseRedirect(request.get_full_path())
                instance = self.get_object(request, unquote(object_id)) or instance
        return self._instance_page(request, instance, state_form, extra_context)

    def _command(self, request: HttpRequest, instance: WorkflowInstance) -> None:
        name = request.POST["_command"]
        try:
            revision = int(request.POST["revision"]) if request.POST.get("revision") else None
        except ValueError:
            revision = None
        declared = engine.ACTIONS.get(name)
        result = run_command(self, request, instance, name, expected_revision=revision,
                             data=request.POST)
        if result.moved and declared is not None:
            self.log_change(request, instance, f"{declared.label} (through the service layer).")
        self.message_user(request, result.text, result.level)

    def _save_state(self, request: HttpRequest, instance: WorkflowInstance,
                    form: StateForm) -> bool:
        """``update_state`` with the form's value; False (errors on the form) to show it again."""
        if not form.is_valid():
            return False
        expected = form.cleaned_data["revision"]
        try:
            services.update_state(instance, form.cleaned_data["state"], user=request.user,
                                  expected_revision=expected)
        except (InvalidState, StateTooLarge) as error:
            form.add_error("state", state_errors(error))
        except NotAllowed as error:  # no form for them: the page says why
            self.message_user(request, f"State not saved: {error}", messages.ERROR)
            return True
        except StaleRevision as error:
            form.add_error(None, f"Not saved: someone changed this instance while you edited "
                                 f"it (revision {error.actual}, your edit started from "
                                 f"{error.expected}). Compare with the state shown, then save "
                                 "again to replace it.")
            form.data = {**form.data, "revision": str(error.actual)}
        except WorkflowError as error:
            form.add_error(None, f"Not saved: {getattr(error, 'reason', error)}")
        else:
            self.log_change(request, instance, "Changed the state (through the service layer).")
            self.message_user(request, "The state was saved.", messages.SUCCESS)
            return True
        return False

    def _instance_page(self, request: HttpRequest, instance: WorkflowInstance,
                       state_form: StateForm | None, extra_context: dict[str, Any] | None,
                       signal_form: SignalForm | None = None) -> TemplateResponse:
        definition = registry.find(instance.workflow)
        context = self._context(
            request, title=f"{definition.title if definition else instance.workflow} "
                           f"{instance.name}",
            original=instance, object_id=str(instance.pk),
            has_delete_permission=self.has_delete_permission(request, instance),
            **self._instance_values(request, instance, state_form, signal_form),
            **(extra_context or {}))
        return TemplateResponse(request, "admin/django_workflows/workflowinstance/detail.html",
                                context)

    def _instance_values(self, request: HttpRequest, instance: WorkflowInstance,
                         state_form: StateForm | None,
                         signal_form: SignalForm | None = None) -> dict[str, Any]:
        """What the page's live parts show: the page's first drawing and the live view's."""
        can_change = self.has_change_permission(request, instance)
        found = verdicts(self, request, instance)
        commands = buttons(found, instance) if can_change else []
        if state_form is None:
            state_form = StateForm(initial={"state": pretty_json(instance.state),
                                            "revision": instance.revision})
        context = instance_context(request, instance)
        on_operations = operation_buttons(self, request, instance)
        for row in context["operations"]:  # the current step's own, not their children
            row["commands"] = on_operations.get(row["id"], []) if row["depth"] == 0 \
                and row["step"] == instance.current_step else []
        journals = context["journals"]  # "Retry from here" on each entry where it applies
        with_buttons(journals, journal_buttons(self, request, instance, positions_of(
            journals, instance.current_step)))
        return {
            "can_change": can_change,
            "commands": [b for b in commands if b.allowed],
            "unavailable": [b for b in commands if not b.allowed], "state_form": state_form,
            "can_edit_state": found["update_state"].allowed,
            **waiting_context(request, instance, signal_form), **recovery_context(instance),
            **instance_failures_context(instance, can_change), **context}

    def live_view(self, request: HttpRequest, object_id: str) -> JsonResponse:
        """Status, operations and branches as JSON, polled by the instance page.

        With ``?revision=`` naming another revision than the instance's, also the page's
        parts drawn anew (``parts``), which the page swaps all together; else, while work
        runs, the timeline drawn up to now (``timeline``) and the journals of the operations
        whose attempt runs (``journals``, by operation id), which grow between revisions.
        """
        instance = self.get_object(request, unquote(object_id))
        if instance is None:
            return JsonResponse({"detail": "No such workflow instance."}, status=404)
        if not self.has_view_or_change_permission(request, instance):
            return JsonResponse({"detail": "You may not view workflow instances."}, status=403)
        payload = live_payload(instance)
        if request.GET.get("revision", str(instance.revision)) != str(instance.revision):
            request.current_app = self.admin_site.name
            payload["parts"] = live_parts(request, self._instance_values(request, instance, None))
            return JsonResponse(payload)
        if (timeline := live_timeline(request, instance)) is not None:
            payload["timeline"] = timeline  # the same revision, later: its bars grown
        if journals := live_journals(request, instance):
            payload["journals"] = journals  # the entries its running code recorded since
        return JsonResponse(payload)

    def definitions_view(self, request: HttpRequest) -> TemplateResponse:
        """The registered workflows with their diagrams and active instance counts."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        context = self._context(request, title="Workflow definitions", **definitions_context())
        return TemplateResponse(request, "admin/django_workflows/definitions.html", context)

    def workflow_view(self, request: HttpRequest, workflow_id: str) -> TemplateResponse:
        """A workflow's page: its instances by step and status now, how long they stay in
        each step and where they fail over ``?period=`` (24h, 7d, 30d)."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        definition = registry.find(workflow_id)
        if definition is None:
            raise Http404("No workflow is registered with this id.")
        period, problem = period_of(request.GET.get("period"))
        context = self._context(
            request, title=definition.title or definition.id, period_problem=problem,
            definitions_url=reverse("admin:django_workflows_workflowinstance_definitions"),
            **workflow_page_context(definition, period))
        return TemplateResponse(request, "admin/django_workflows/workflow.html", context,
                                status=400 if problem else 200)
