"""The endpoints of DESIGN.md §4. Every change goes through the service layer."""

from __future__ import annotations

import json
from typing import Any

from django.urls import NoReverseMatch, reverse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from .. import registry, services
from ..exceptions import WorkflowNotMoved
from ..models import WorkflowEvent, WorkflowInstance
from ..permissions import definition_allows
from ..queries import live_attempts
from ..services.idempotency import fingerprint_of
from .errors import exception_handler, workflow_error
from .filters import InstanceFilter, InstanceFilterBackend, Pages, StableOrdering
from .parsing import JSONBodyParser, etag, expected_revision, idempotency_key
from .permissions import InstanceAccess, listed, visible_instances
from .schema import (
    ACTION_RESPONSES,
    ETAG,
    IDEMPOTENCY_KEY,
    IF_MATCH,
    NOT_ALLOWED,
    UNKNOWN_INSTANCE,
    error_response,
)
from .serializers import (
    CreateInstanceSerializer,
    EventSerializer,
    InstanceSerializer,
    StateSerializer,
    WorkflowDetailSerializer,
    WorkflowSerializer,
    children_of,
)

UUID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

# -- the views --------------------------------------------------------------------------


class WorkflowsAPIView:
    """What every endpoint shares: JSON only, the error mapping, authenticated users.

    Authentication and throttle classes come from the project's REST_FRAMEWORK
    settings (read per request); the throttle scope is ``"workflows"``.
    """

    renderer_classes = [JSONRenderer]
    parser_classes = [JSONBodyParser]
    permission_classes = [IsAuthenticated]
    throttle_scope = "workflows"
    schema = AutoSchema()

    def get_exception_handler(self) -> Any:
        return exception_handler

    def get_authenticators(self) -> list[Any]:
        return [auth() for auth in api_settings.DEFAULT_AUTHENTICATION_CLASSES]

    def get_throttles(self) -> list[Any]:
        return [throttle() for throttle in api_settings.DEFAULT_THROTTLE_CLASSES]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        if request.method in ("POST", "PUT", "PATCH"):
            # Django's DATA_UPLOAD_MAX_MEMORY_SIZE is checked when the body is read whole
            # (DRF's parsers would stream it past the check): RequestDataTooBig -> 413.
            request._request.body  # noqa: B018


@extend_schema_view(
    list=extend_schema(summary="Workflow definitions", responses={
        200: WorkflowSerializer(many=True), **NOT_ALLOWED}),
    retrieve=extend_schema(summary="One workflow definition, with its graph", parameters=[
        OpenApiParameter("id", str, OpenApiParameter.PATH, description="The workflow's id.")],
        responses={200: WorkflowDetailSerializer, **NOT_ALLOWED,
                   404: error_response("No workflow with that id.")}),
)
class WorkflowViewSet(WorkflowsAPIView, viewsets.ViewSet):
    """The registered workflow definitions."""

    lookup_field = "id"
    lookup_value_regex = r"[^/]+"

    def list(self, request: Request) -> Response:
        definitions = sorted(registry.all_definitions(), key=lambda d: d.id)
        return Response(WorkflowSerializer(definitions, many=True).data)

    def retrieve(self, request: Request, id: str | None = None) -> Response:
        definition = registry.find(id or "")
        if definition is None:
            raise exceptions.NotFound(f'No workflow "{id}" is registered.')
        return Response(WorkflowDetailSerializer(definition).data)


class Answer:
    """The answer to a command: the one stored with its idempotency key, or a replay of it.

    The service calls :meth:`respond` inside the command's transaction when a
    key is given, and stores what it returns; a request repeated with the
    key gets exactly that again.
    """

    def __init__(self, view: InstanceViewSet, success: int) -> None:
        self.view = view
        self.success = success
        self.first: tuple[int, Any] | None = None

    def respond(self, instance: WorkflowInstance | None, refusal: WorkflowNotMoved | None
                ) -> tuple[int, Any]:
        if refusal is not None:
            refused = workflow_error(refusal)
            assert refused is not None
            self.first = (refused.status_code, refused.data)
        else:
            assert instance is not None
            self.first = (self.success, json.loads(json.dumps(self.view.represent(instance))))
        return self.first

    def response(self, instance: WorkflowInstance) -> Response:
        headers = {}
        replayed = getattr(instance, "replayed", None)
        if replayed is not None:
            status_code, body = replayed
            headers["Idempotent-Replayed"] = "true"
        elif self.first is not None:
            status_code, body = self.first
        else:
            status_code, body = self.success, self.view.represent(instance)
        if isinstance(body, dict) and "revision" in body:
            headers["ETag"] = etag(body["revision"])
        if status_code == status.HTTP_201_CREATED:
            headers["Location"] = self.view.location_of(instance)
        return Response(body, status=status_code, headers=headers)


def _command_schema(name: str, summary: str) -> Any:
    return extend_schema(operation_id=f"instances_{name}", summary=summary, request=None,
                         parameters=[IF_MATCH, IDEMPOTENCY_KEY, ETAG],
                         responses=ACTION_RESPONSES)


@extend_schema_view(
    list=extend_schema(summary="Instances you may see", responses={
        200: InstanceSerializer(many=True), 400: error_response("A bad filter value."),
        **NOT_ALLOWED, 404: error_response("No such page.")}),
    retrieve=extend_schema(summary="One instance", parameters=[ETAG], responses={
        200: InstanceSerializer, **NOT_ALLOWED, 404: UNKNOWN_INSTANCE}),
    create=extend_schema(
        summary="Create an instance (and start it)", request=CreateInstanceSerializer,
        parameters=[IDEMPOTENCY_KEY, ETAG], responses={
            201: OpenApiResponse(InstanceSerializer, description="Created."),
            400: error_response("Bad input; a state that breaks the definition's schema "
                        "(`invalid_state`, `fields` names each field)."),
            **NOT_ALLOWED,
            413: error_response("The state (or the body) is larger than the limit."),
            422: error_response("The Idempotency-Key was already used for a different request.")}),
)
class InstanceViewSet(WorkflowsAPIView, viewsets.GenericViewSet):
    """Workflow instances: create, read, and drive them with commands.

    You see the instances you own; the model's view permission shows all of
    them, its change permission lets you act on all of them. Another user's
    instance answers 404.
    """

    queryset = WorkflowInstance.objects.all()
    serializer_class = InstanceSerializer
    lookup_value_regex = UUID_PATTERN
    permission_classes = [InstanceAccess]
    filter_backends = [InstanceFilterBackend, StableOrdering]
    filterset_class = InstanceFilter
    ordering_fields = ["created_at", "updated_at", "started_at", "completed_at", "status",
                       "workflow", "current_step"]
    ordering = ["-created_at"]
    pagination_class = Pages

    # What the access rules and the definition's permission hook are asked about.
    @property
    def workflow_action(self) -> str:
        if self.action in ("retrieve", "events", "list"):
            return "view"
        return "update_state" if self.action == "state" else str(self.action)

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the types
            return WorkflowInstance.objects.none()
        return visible_instances(self.request.user)

    def filter_queryset(self, queryset: Any) -> Any:
        # Filters and ordering shape the list only; a detail URL names one instance.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def represent(self, instance: WorkflowInstance) -> dict[str, Any]:
        return InstanceSerializer(instance, context={"request": self.request}).data

    def location_of(self, instance: WorkflowInstance) -> str:
        namespace = self.request.resolver_match.namespace if self.request.resolver_match else ""
        name = f"{namespace}:instance-detail" if namespace else "instance-detail"
        try:
            return self.request.build_absolute_uri(reverse(name, args=[instance.pk]))
        except NoReverseMatch:
            return ""

    def list(self, request: Request) -> Response:
        instances = listed(request.user, self.get_queryset())
        page = self.paginate_queryset(self.filter_queryset(instances))
        assert page is not None
        serializer = InstanceSerializer(page, many=True, context={
            "request": request, "children": children_of(page), "attempts": live_attempts(page)})
        return self.get_paginated_response(serializer.data)

    def create(self, request: Request) -> Response:
        serializer = CreateInstanceSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if not definition_allows(request.user, data["workflow"], None, "create"):
            raise exceptions.PermissionDenied(
                f'You may not create instances of workflow "{data["workflow"]}".')
        answer = Answer(self, status.HTTP_201_CREATED)
        instance = services.create(data["workflow"], state=data.get("state"),
                                   start=data["start"], user=request.user,
                                   idempotency_key=idempotency_key(request),
                                   respond=answer.respond)
        return answer.response(instance)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        return Response(self.represent(instance), headers={"ETag": etag(instance.revision)})

    def _command(self, request: Request, name: str) -> Response:
        instance = self.get_object()
        body = request.data
        if not isinstance(body, dict):
            raise exceptions.ValidationError({"non_field_errors": [
                "Send no body, or a JSON object."]})
        revision, key = expected_revision(request), idempotency_key(request)
        answer = Answer(self, status.HTTP_200_OK)
        moved = services.command(
            instance, name, user=request.user, expected_revision=revision, idempotency_key=key,
            fingerprint=fingerprint_of(name, str(instance.pk), dict(body)) if key else None,
            respond=answer.respond)
        return answer.response(moved)

    @_command_schema("start", "Start an idle instance")
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "start")

    @_command_schema("next", "Validate and leave the current step, then follow the "
                             "transitions")
    @action(detail=True, methods=["post"])
    def next(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "next")

    @_command_schema("back", "Go back to the previous step")
    @action(detail=True, methods=["post"])
    def back(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "back")

    @_command_schema("skip", "Skip the current step")
    @action(detail=True, methods=["post"])
    def skip(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "skip")

    @_command_schema("validate", "Validate the current step (errors: blocked)")
    @action(detail=True, methods=["post"])
    def validate(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "validate")

    @_command_schema("retry", "Retry a failed or blocked instance")
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "retry")

    @_command_schema("cancel", "Cancel the instance")
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "cancel")

    @_command_schema("rollback", "Undo what was done and return to idle")
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, pk: str | None = None) -> Response:
        return self._command(request, "rollback")

    @extend_schema(operation_id="instances_update_state", summary="Replace the state",
                   request=StateSerializer, parameters=[IF_MATCH, ETAG], responses={
                       200: OpenApiResponse(InstanceSerializer, description="The instance."),
                       400: error_response("Bad input, or a state that breaks the definition's "
                                   "schema (`invalid_state`; `fields` names each field)."),
                       **NOT_ALLOWED, 404: UNKNOWN_INSTANCE,
                       409: error_response("Refused by a rule (e.g. `cancelled`), or `busy`."),
                       412: ACTION_RESPONSES[412],
                       413: error_response("The state (or the body) is larger than the limit.")})
    @action(detail=True, methods=["patch"], url_path="state")
    def state(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        serializer = StateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        moved = services.update_state(instance, serializer.validated_data["state"],
                                      user=request.user,
                                      expected_revision=expected_revision(request))
        return Response(self.represent(moved), headers={"ETag": etag(moved.revision)})

    @extend_schema(summary="The event log, oldest first", responses={
        200: EventSerializer(many=True), **NOT_ALLOWED, 404: UNKNOWN_INSTANCE})
    @action(detail=True, methods=["get"], filter_backends=[])
    def events(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        events = WorkflowEvent.objects.filter(instance=instance).order_by("sequence")
        page = self.paginate_queryset(events)
        return self.get_paginated_response(EventSerializer(page, many=True).data)
