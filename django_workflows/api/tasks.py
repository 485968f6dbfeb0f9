"""Tasks in the API (``docs/tasks.md``): an inbox, one task, and its claim, release, complete.

The list is the user's own: the open tasks they may act on and, when ``?status=`` asks
for more, the closed ones they claimed or decided. Its filters only narrow it; every
task of an instance is ``GET /api/instances/<id>/tasks/``, for whoever may see the
instance. Every change goes through the service layer, which judges under the
instance's row lock whether the user is one of the task's candidates.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from .. import engine, services
from ..models import TaskStatus, WorkflowTask
from ..reading import inbox
from ..services.access import acting_on_tasks, visible_tasks
from ..services.idempotency import fingerprint_of
from .commands import CommandActions
from .filters import InstanceFilterBackend, Pages, UserIdFilter
from .parsing import etag, expected_revision, idempotency_key
from .schema import (
    NOT_ALLOWED,
    described,
    error_response,
)
from .serializers import InstanceSerializer
from .task_serializers import TaskSerializer
from .views import UUID_PATTERN, WorkflowsAPIView

STATUS_CHOICES = [(value, value) for value in (*TaskStatus.values, "all")]


def asked_status(request: Request) -> str:
    """The list's ``?status=``: open when not given (or given empty), whatever else is."""
    return request.query_params.get("status") or TaskStatus.OPEN


def your_tasks(user: Any, wanted: str) -> QuerySet[Any]:
    """What the list filters, by the status ``wanted``: the open tasks ``user`` may act on
    (the inbox, overdue first), and for any other status the closed tasks they claimed or
    decided. Not the tasks of their own instances as such: those are not theirs to do."""
    inbox = acting_on_tasks(user)
    if wanted == TaskStatus.OPEN:
        return inbox  # one index lookup
    done_by_them = ~Q(status=TaskStatus.OPEN) & (Q(claimed_by=user) | Q(completed_by=user))
    if wanted == "all":
        tasks = WorkflowTask.objects.filter(Q(pk__in=inbox.order_by().values("pk"))
                                            | done_by_them)
    else:  # done, cancelled (another value: the filter answers 400)
        tasks = WorkflowTask.objects.filter(done_by_them)
    return tasks.order_by(*WorkflowTask.INBOX_ORDER)


class TaskFilter(django_filters.FilterSet):
    """``?status=open|done|cancelled|all`` (default open), ``?instance=``, ``?workflow=``,
    ``?assigned=me`` (the ones you claimed): each narrows the list of your tasks, none
    widens it (see :func:`your_tasks`)."""

    status = django_filters.ChoiceFilter(
        choices=STATUS_CHOICES, method="with_status",
        help_text="open (the default): the tasks you may act on; done, cancelled: those you "
                  "claimed or decided; all: both.")
    instance = django_filters.UUIDFilter(
        field_name="instance_id",
        help_text="Your tasks on one instance (all of its tasks: "
                  "GET /api/instances/{id}/tasks/).")
    workflow = django_filters.CharFilter(help_text="A workflow id.")
    assigned = django_filters.ChoiceFilter(choices=[("me", "me")], method="claimed_by_me",
                                           help_text="me: the tasks you claimed.")
    reference = django_filters.CharFilter(
        method="with_reference",
        help_text="An instance's reference (exact): the tasks of that instance and of the "
                  "workflows nested in it.")
    owner = UserIdFilter(field_name="instance__owner",
                         help_text="The instance owner's user id (no such user: no tasks).")
    root = django_filters.UUIDFilter(
        method="under_root",
        help_text="An instance's id: the tasks of that instance and of the workflows nested "
                  "in it (its root, as each task names it).")

    class Meta:
        model = WorkflowTask
        fields = ["status", "instance", "workflow", "assigned", "reference", "owner", "root"]

    def with_reference(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return queryset.filter(inbox.of_reference(value))

    def under_root(self, queryset: QuerySet[Any], name: str, value: Any) -> QuerySet[Any]:
        return queryset.filter(inbox.of_root(value))

    def with_status(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return queryset if value == "all" else queryset.filter(status=value)

    def claimed_by_me(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        assert self.request is not None  # the API's filter: it has the request
        return queryset.filter(claimed_by=self.request.user)


COMPLETED = inline_serializer("Completed", fields={
    "task": TaskSerializer(), "instance": InstanceSerializer()})
TASK_RESPONSES = {
    200: OpenApiResponse(TaskSerializer, description="The task."),
    400: error_response("Input that breaks the task's form (`invalid_input`; `fields` names "
                        "each field as `input.<field>`), or a malformed body or header."),
    **NOT_ALLOWED,
    404: error_response("No such task, or one you may not see."),
    409: error_response("The task is closed (`task_closed`, `no_task`) or claimed by "
                        "someone else (`task_claimed`); or the instance was busy."),
    412: error_response("If-Match named a stale revision of the task's instance."),
    413: error_response("The request body is too large."),
    422: error_response("The Idempotency-Key was already used for a different request."),
}


@extend_schema_view(
    list=described(summary="Your tasks: by default the open ones you may act on, overdue "
                           "first; the filters narrow the list",
                   responses={200: TaskSerializer(many=True),
                              400: error_response("A bad filter value."),
                              **NOT_ALLOWED, 404: error_response("No such page.")}),
    retrieve=described(summary="One task", responses={
        200: TaskSerializer, **NOT_ALLOWED, 404: error_response("No such task.")}),
)
class TaskViewSet(CommandActions, WorkflowsAPIView,
                  viewsets.GenericViewSet[WorkflowTask]):
    """Tasks people must do on workflow instances: find them, claim them, complete them."""

    queryset = WorkflowTask.objects.all()
    serializer_class = TaskSerializer
    lookup_value_regex = UUID_PATTERN
    filter_backends = [InstanceFilterBackend]  # django-filter's, with the filters' schema
    filterset_class = TaskFilter
    pagination_class = Pages
    commands = engine.TASK_COMMANDS  # POST /api/tasks/<id>/<name>/ for each
    operation_prefix = "tasks"
    given_by_url = ("task",)

    @classmethod
    def responses_of(cls, declared: type[engine.PersonCommand]) -> dict[int, Any]:
        if declared.name == "complete":
            return {**TASK_RESPONSES, 200: OpenApiResponse(
                COMPLETED, description="The task and its instance.")}
        return TASK_RESPONSES

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the types
            return WorkflowTask.objects.none()
        user = self.request.user
        if self.action == "list":  # the filters narrow it (filter_queryset)
            return your_tasks(user, asked_status(self.request))
        return visible_tasks(user).order_by(*WorkflowTask.INBOX_ORDER)

    def filter_queryset(self, queryset: Any) -> Any:
        # The filters narrow the list only; a detail URL names one task.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response(
            TaskSerializer(page, many=True, context={"request": request}).data)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        task = self.get_object()
        return Response(TaskSerializer(task, context={"request": request}).data,
                        headers={"ETag": etag(task.instance.revision)})

    def give(self, request: Request, declared: type[engine.PersonCommand]) -> Response:
        """Give ``declared`` to the task, with what the body says it takes."""
        task = self.get_object()
        taken = self.taken(request, declared)
        key = idempotency_key(request)
        instance = services.execute(
            task.instance_id, declared(**{**taken, "task": str(task.pk)}), user=request.user,
            expected_revision=expected_revision(request), idempotency_key=key,
            fingerprint=fingerprint_of(declared.name, str(task.pk), request.data)
            if key else None)
        task.refresh_from_db()
        answer: dict[str, Any] = TaskSerializer(task, context={"request": request}).data
        if declared.name == "complete":
            answer = {"task": answer, "instance": InstanceSerializer(
                instance, context={"request": request}).data}
        headers = {"ETag": etag(instance.revision)}
        if getattr(instance, "replayed", False):
            headers["Idempotent-Replayed"] = "true"
        return Response(answer, status=status.HTTP_200_OK, headers=headers)
