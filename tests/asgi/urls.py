"""Async views that give commands through the services' async twins (docs/concepts.md's
example): the shape of a project's own async views, served under ASGI in the tests."""

from __future__ import annotations

from uuid import UUID

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.http import require_POST

from django_workflows import services
from django_workflows.exceptions import StaleRevision, WorkflowNotMoved
from django_workflows.models import WorkflowInstance


def answer(instance: WorkflowInstance, status: int = 200) -> JsonResponse:
    return JsonResponse({"id": str(instance.pk), "status": instance.status,
                         "step": instance.current_step, "revision": instance.revision},
                        status=status)


@require_POST
async def start_checklist(request: HttpRequest) -> JsonResponse:
    user = await request.auser()
    instance = await services.acreate("long-manual", owner=user, user=user, start=True)
    return answer(instance, status=201)


@require_POST
async def next_step(request: HttpRequest, pk: UUID) -> JsonResponse:
    user = await request.auser()
    try:
        instance = await services.anext(pk, user=user,
                                        expected_revision=int(request.POST["revision"]))
    except WorkflowNotMoved as refused:
        return JsonResponse({"detail": refused.reason, "code": refused.code}, status=409)
    except StaleRevision as stale:
        return JsonResponse({"detail": str(stale), "code": "stale_revision"}, status=412)
    return answer(instance)


urlpatterns = [
    path("checklists/", start_checklist),
    path("checklists/<uuid:pk>/next/", next_step),
]
