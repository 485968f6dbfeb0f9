"""The tasks of DESIGN.md §4 (Tasks): an inbox, one task, and its claim, release, complete.

Every change goes through the service layer, which judges under the instance's
row lock whether the user is one of the task's candidates.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from .. import engine, services
from ..models import TaskStatus, WorkflowTask
from ..queries import form_of
from ..services.access import acting_on_tasks, visible_tasks
from ..services.idempotency import fingerprint_of
from .filters import Pages
from .parsing import etag, expected_revision, idempotency_key
from .schema import (
    ETAG,
    IDEMPOTENCY_KEY,
    IF_MATCH,
    NOT_ALLOWED,
    described,
    error_response,
)
from .serializers import InstanceSerializer, command_body
from .views import UUID_PATTERN, WorkflowsAPIView

STATUS_CHOICES = [(value, value) for value in (*TaskStatus.values, "all")]


class TaskFilter(django_filters.FilterSet):
    """``?status=open|done|cancelled|all`` (default open), ``?instance=``, ``?workflow=``,
    ``?assigned=me`` (the ones you claimed)."""

    status = django_filters.ChoiceFilter(choices=STATUS_CHOICES, method="with_status",
                                         help_text="open (the default), done, cancelled, all.")
    instance = django_filters.UUIDFilter(field_name="instance_id",
                                         help_text="Tasks of one instance.")
    workflow = django_filters.CharFilter(help_text="A workflow id.")
    assigned = django_filters.ChoiceFilter(choices=[("me", "me")], method="claimed_by_me",
                                           help_text="me: the tasks you claimed.")

    class Meta:
        model = WorkflowTask
        fields = ["status", "instance", "workflow", "assigned"]

    def with_status(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return queryset if value == "all" else queryset.filter(status=value)

    def claimed_by_me(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        assert self.request is not None  # the API's filter: it has the request
        return queryset.filter(claimed_by=self.request.user)


class TaskSerializer(serializers.ModelSerializer):
    """A task, as ``GET /api/tasks/<id>/`` returns it."""

    instance = serializers.UUIDField(source="instance_id", read_only=True)
    form = serializers.SerializerMethodField()
    candidates = serializers.ListField(child=serializers.CharField(), read_only=True)
    claimed_by = serializers.IntegerField(source="claimed_by_id", read_only=True,
                                          allow_null=True, help_text="The user's id.")
    completed_by = serializers.IntegerField(source="completed_by_id", read_only=True,
                                            allow_null=True, help_text="The user's id.")
    input = serializers.DictField(read_only=True, allow_null=True)

    class Meta:
        model = WorkflowTask
        fields = ["id", "instance", "workflow", "step", "title", "form", "status",
                  "candidates", "claimed_by", "completed_by", "input", "due_at", "overdue",
                  "created_at", "completed_at"]
        read_only_fields = fields

    def get_form(self, task: WorkflowTask) -> dict[str, Any] | None:
        """The input's JSON Schema."""
        return form_of(task)


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
    list=described(summary="Tasks: by default the open ones you may act on, overdue first",
                       responses={200: TaskSerializer(many=True),
                                  400: error_response("A bad filter value."),
                                  **NOT_ALLOWED, 404: error_response("No such page.")}),
    retrieve=described(summary="One task", responses={
        200: TaskSerializer, **NOT_ALLOWED, 404: error_response("No such task.")}),
)
class TaskViewSet(WorkflowsAPIView, viewsets.GenericViewSet):
    """Tasks people must do on workflow instances: find them, claim them, complete them."""

    queryset = WorkflowTask.objects.all()
    serializer_class = TaskSerializer
    lookup_value_regex = UUID_PATTERN
    filterset_class = TaskFilter
    pagination_class = Pages

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the types
            return WorkflowTask.objects.none()
        user = self.request.user
        params = self.request.query_params
        if self.action == "list" and not params.get("instance") and \
                params.get("status", "open") in ("", "open"):
            return acting_on_tasks(user)  # the inbox: overdue first, then the soonest due
        return visible_tasks(user).order_by(*WorkflowTask.INBOX_ORDER)

    def get_serializer_class(self) -> type[serializers.Serializer]:
        # What the browsable API's form for a command sends.
        if self.action in engine.TASK_COMMANDS:
            return command_body(engine.TASK_COMMANDS[self.action], given=("task",))
        return TaskSerializer

    def filter_queryset(self, queryset: Any) -> Any:
        from django_filters.rest_framework import DjangoFilterBackend

        if self.action != "list":
            return queryset
        return DjangoFilterBackend().filter_queryset(self.request, queryset, self)

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response(TaskSerializer(page, many=True).data)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        task = self.get_object()
        return Response(TaskSerializer(task).data, headers={"ETag": etag(task.instance.revision)})

    def give(self, request: Request, declared: type[engine.PersonCommand]) -> Response:
        """Give ``declared`` to the task, with what the body says it takes."""
        task = self.get_object()
        body = request.data
        if not isinstance(body, dict):
            raise exceptions.ValidationError({"non_field_errors": [
                "Send no body, or a JSON object."]})
        taken = command_body(declared, given=("task",))(data=body)
        taken.is_valid(raise_exception=True)
        key = idempotency_key(request)
        instance = services.command(
            task.instance_id, declared.name, task=str(task.pk), user=request.user,
            expected_revision=expected_revision(request), idempotency_key=key,
            fingerprint=fingerprint_of(declared.name, str(task.pk), body) if key else None,
            **taken.validated_data)
        task.refresh_from_db()
        answer: dict[str, Any] = TaskSerializer(task).data
        if declared.name == "complete":
            answer = {"task": answer, "instance": InstanceSerializer(
                instance, context={"request": request}).data}
        headers = {"ETag": etag(instance.revision)}
        if getattr(instance, "replayed", False):
            headers["Idempotent-Replayed"] = "true"
        return Response(answer, status=status.HTTP_200_OK, headers=headers)


def _task_action(declared: type[engine.PersonCommand]) -> Any:
    """``POST /api/tasks/<id>/<name>/`` for a declared task command, with its OpenAPI entry."""
    def run(self: TaskViewSet, request: Request, pk: str | None = None) -> Response:
        return self.give(request, declared)

    run.__name__ = declared.name
    run.__doc__ = declared.summary
    body = command_body(declared, given=("task",))
    responses = {**TASK_RESPONSES}
    if declared.name == "complete":
        responses[200] = OpenApiResponse(COMPLETED, description="The task and its instance.")
    describe = described(operation_id=f"tasks_{declared.name}", summary=declared.summary,
                              request=body if body().fields else None,
                              parameters=[IF_MATCH, IDEMPOTENCY_KEY, ETAG], responses=responses)
    return describe(action(detail=True, methods=["post"], url_path=declared.name)(run))


for _name, _declared in engine.TASK_COMMANDS.items():
    setattr(TaskViewSet, _name, _task_action(_declared))
