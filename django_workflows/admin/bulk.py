"""Commands on the instances a changelist selects: an action per declared command that
needs nothing but the instance.

Each selected instance is given the command through :func:`run_command`, as on its page:
as the user, judged on its own row. A command that undoes work (declared
``destructive``), or that the rule asks a person to confirm for one of the instances
(``back`` reopening a completed one, ``start`` of a rolled-back one: the verdict's
``confirm``), first shows a page, as Django's delete action does: each instance, and what
the command will do to it or why it is refused. "Yes, I'm sure" gives it to the instances
that page said it would act on, each at the revision the page showed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.http import HttpRequest, HttpResponse, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse

from .. import engine, registry
from ..conf import workflow_settings
from ..models import WorkflowInstance
from .command_forms import bound_form
from .commands import describe, run_command, verdicts
from .pages import change_url

CONFIRMED = "post"  # the field Django's own delete confirmation posts, with "yes"
REVISIONS = "_revisions"  # "<id>:<revision> ...": each instance as the page showed it
BULK_NAMED = 5  # instances named in a message of a bulk action; the rest are counted
TEMPLATE = "admin/django_workflows/workflowinstance/bulk_confirmation.html"


@cache
def bulk_action(name: str, label: str) -> Any:
    """The changelist action that gives the command ``name`` to each selected instance."""
    def action(model_admin: Any, request: HttpRequest, queryset: Any) -> HttpResponse | None:
        limit = int(workflow_settings.ADMIN_BULK_LIMIT)
        instances = list(queryset[: limit + 1])
        if len(instances) > limit:
            model_admin.message_user(
                request, f"{label}: select at most {limit} instances at once; "
                         "nothing was done.", messages.ERROR)
            return None
        return run_selected(model_admin, request, instances, name)

    action.__name__ = f"{name}_selected"
    return admin.action(description=f"{label}: selected instances",
                        permissions=["change"])(action)


@dataclass(frozen=True)
class Planned:
    """A selected instance as the confirmation page lists it."""

    instance: WorkflowInstance
    verdict: engine.Verdict
    label: str

    @property
    def what(self) -> str:
        """What the command will do to it, in the rule's words, or why it is refused."""
        if not self.verdict.allowed:
            return f"Refused: {self.verdict.message}"
        return f"{self.label} — {self.verdict.confirm}" if self.verdict.confirm else self.label


def run_selected(model_admin: Any, request: HttpRequest, instances: list[WorkflowInstance],
                 name: str) -> HttpResponse | None:
    """Give the command to the instances, or first the page asking to confirm it."""
    declared = engine.ACTIONS[name]
    if request.POST.get(CONFIRMED) == "yes":
        run_bulk(model_admin, request, instances, name,
                 revisions=confirmed_revisions(request.POST), data=request.POST)
        return None
    plan = [Planned(instance, verdicts(model_admin, request, instance, [declared])[name],
                    declared.label) for instance in instances]
    if declared.destructive or any(p.verdict.allowed and p.verdict.confirm for p in plan):
        return confirmation_page(model_admin, request, declared, plan)
    run_bulk(model_admin, request, instances, name)
    return None


def confirmation_page(model_admin: Any, request: HttpRequest,
                      declared: type[engine.PersonCommand], plan: list[Planned]
                      ) -> TemplateResponse:
    label, total = declared.label, len(plan)
    allowed = [p for p in plan if p.verdict.allowed]
    selected = "the selected workflow instance" if total == 1 else \
        f"the {total} selected workflow instances"
    request.current_app = model_admin.admin_site.name
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts, "media": model_admin.media, "title": "Are you sure?",
        "label": label, "summary": declared.summary, "selected": selected,
        "applies": _applies(label, len(allowed), total),
        "rows": [{"pk": str(p.instance.pk), "short": f"{str(p.instance.pk)[:8]}…",
                  "url": change_url(p.instance.pk), "workflow": _title(p.instance),
                  "now": describe(p.instance), "allowed": p.verdict.allowed, "what": p.what}
                 for p in plan],
        "confirmed": [str(p.instance.pk) for p in allowed],
        "revisions": " ".join(f"{p.instance.pk}:{p.instance.revision}" for p in allowed),
        "inputs": list(bound_form(declared).visible_fields()),  # cancel's reason
        "action": f"{declared.name}_selected", "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "confirmed_field": CONFIRMED, "revisions_field": REVISIONS,
        "changelist_url": reverse("admin:django_workflows_workflowinstance_changelist"),
    }
    return TemplateResponse(request, TEMPLATE, context)


def _applies(label: str, allowed: int, total: int) -> str:
    if allowed == 0:
        return f"{label} applies to none of the selected instances: there is nothing to confirm."
    if allowed == total:
        return f"{label} applies to {'it' if total == 1 else f'all {total} of them'}."
    others = total - allowed
    return (f"{label} applies to {allowed} of the {total} selected instances; "
            + ("the other stays as it is." if others == 1
               else f"the {others} others stay as they are."))


def _title(instance: WorkflowInstance) -> str:
    definition = registry.find(instance.workflow)
    return definition.title if definition is not None and definition.title \
        else instance.workflow


def confirmed_revisions(data: QueryDict) -> dict[str, int]:
    """The revision of each instance as the confirmation page showed it, by id."""
    found: dict[str, int] = {}
    for item in data.get(REVISIONS, "").split():
        pk, _, revision = item.partition(":")
        if revision.isascii() and revision.isdigit() and len(revision) <= 18:
            found[pk] = int(revision)  # anything else was not written by the page: no revision
    return found


def run_bulk(model_admin: Any, request: HttpRequest, instances: list[WorkflowInstance],
             name: str, *, revisions: dict[str, int] | None = None, data: Any = None) -> None:
    """Run ``name`` on every instance (each judged as ``request.user`` by the services,
    at the revision in ``revisions`` if given, with what ``data`` gives the command); one
    message for the moved, and one per reason the others did not move, naming them."""
    label = engine.ACTIONS[name].label
    moved = 0
    refused: dict[tuple[int, str], list[WorkflowInstance]] = {}
    for instance in instances:
        expected = (revisions or {}).get(str(instance.pk))
        result = run_command(model_admin, request, instance, name, expected_revision=expected,
                             data=data)
        if result.moved:
            moved += 1
        else:
            refused.setdefault((result.level, result.text), []).append(instance)
    if moved:
        model_admin.message_user(
            request, f"{label}: {moved} instance{'s' if moved != 1 else ''} moved.",
            messages.SUCCESS)
    elif not instances:
        model_admin.message_user(request, f"{label}: no instances selected.", messages.WARNING)
    for (level, text), group in refused.items():
        model_admin.message_user(request, _refused_together(text, group), level)


def _short(instance: WorkflowInstance) -> str:
    return f"{instance.workflow} {str(instance.pk)[:8]}…"


def _refused_together(text: str, group: list[WorkflowInstance]) -> str:
    """One reason and the instances it kept from moving (the first few named)."""
    if len(group) == 1:
        return f"{_short(group[0])}: {text}"
    named = ", ".join(_short(instance) for instance in group[:BULK_NAMED])
    more = f" and {len(group) - BULK_NAMED} more" if len(group) > BULK_NAMED else ""
    return f"{len(group)} instances not moved: {text} ({named}{more})"
