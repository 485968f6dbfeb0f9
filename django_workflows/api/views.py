"""The endpoints of ``docs/api.md``. Every change goes through the service layer."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_view,
)
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from .. import engine, registry, services
from ..exceptions import InstanceNotFound, ReferenceTaken, WorkflowNotMoved
from ..models import JournalEntry, WorkflowEvent, WorkflowInstance, WorkflowTask
from ..reading.queries import live_attempts
from ..services import access
from ..services.idempotency import fingerprint_of
from .commands import CommandActions
from .errors import JSONErrors
from .filters import InstanceFilter, InstanceFilterBackend, Pages, StableOrdering
from .parsing import (
    JSONBodyParser,
    MergePatchParser,
    check_state_body,
    etag,
    expected_revision,
    idempotency_key,
    is_merge_patch,
    merge_patch,
)
from .permissions import InstanceAccess, listed, visible_instances
from .schema import (
    ACTION_RESPONSES,
    ETAG,
    IDEMPOTENCY_KEY,
    IF_MATCH,
    NOT_ALLOWED,
    UNKNOWN_INSTANCE,
    WorkflowsSchema,
    described,
    error_response,
)
from .serializers import (
    CreateInstanceSerializer,
    EventSerializer,
    InstanceSerializer,
    JournalEntrySerializer,
    StatePatchSerializer,
    StateSerializer,
    WorkflowDetailSerializer,
    WorkflowSerializer,
    children_of,
)
from .task_serializers import TaskSerializer

UUID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _classes(setting: Sequence[Any]) -> Sequence[Any]:
    """Classes of a REST_FRAMEWORK setting: api_settings imports them (the stubs before
    djangorestframework-stubs 3.18.2 say dotted paths; these and newer, classes)."""
    return setting


# -- the views --------------------------------------------------------------------------


class WorkflowsAPIView(JSONErrors):
    """What every endpoint shares: JSON by default, JSON errors, authenticated users.

    Authentication, throttle and renderer classes come from the project's
    REST_FRAMEWORK settings (read per request); the throttle scope is ``"workflows"``.
    """

    parser_classes = [JSONBodyParser]
    permission_classes = [IsAuthenticated]
    throttle_scope = "workflows"
    schema = WorkflowsSchema()

    # Read from the settings on each request, never set.
    @property
    def renderer_classes(  # type: ignore[override]  # a property over DRF's attribute
            self) -> list[type[BaseRenderer]]:
        # JSON first, the answer to */*; then the project's others: DRF's browsable API,
        # unless DEFAULT_RENDERER_CLASSES leaves it out. Errors: see JSONErrors.
        return [JSONRenderer, *(renderer for renderer in _classes(
            api_settings.DEFAULT_RENDERER_CLASSES)
            if renderer.media_type != JSONRenderer.media_type)]

    def get_authenticators(self) -> list[Any]:
        return [auth() for auth in _classes(api_settings.DEFAULT_AUTHENTICATION_CLASSES)]

    def get_throttles(self) -> list[Any]:
        return [throttle() for throttle in _classes(api_settings.DEFAULT_THROTTLE_CLASSES)]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method in ("POST", "PUT", "PATCH"):
            # Django's DATA_UPLOAD_MAX_MEMORY_SIZE is checked when the body is read whole
            # (DRF's parsers would stream it past the check): RequestDataTooBig -> 413.
            request._request.body  # noqa: B018


@extend_schema_view(
    list=described(summary="Workflow definitions", responses={
        200: WorkflowSerializer(many=True), **NOT_ALLOWED}),
    retrieve=described(summary="One workflow definition, with its graph", parameters=[
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


def sees(user: Any, instance_id: str) -> bool:
    """Whether ``user`` may see the instance ``instance_id`` (the access rule for "view"),
    so that an answer may name it."""
    instance = WorkflowInstance.objects.filter(pk=instance_id).first()
    if instance is None:
        return False
    try:
        return access.refusal(user, instance, access.VIEW) is None
    except InstanceNotFound:
        return False


@extend_schema_view(
    list=described(summary="Instances you may see", responses={
        200: InstanceSerializer(many=True), 400: error_response("A bad filter value."),
        **NOT_ALLOWED, 404: error_response("No such page.")}),
    retrieve=described(summary="One instance", parameters=[ETAG], responses={
        200: InstanceSerializer, **NOT_ALLOWED, 404: UNKNOWN_INSTANCE}),
    create=described(
        summary="Create an instance (and start it)", request=CreateInstanceSerializer,
        parameters=[IDEMPOTENCY_KEY, ETAG], responses={
            201: OpenApiResponse(InstanceSerializer, description="Created."),
            400: error_response("Bad input; a state that breaks the definition's schema "
                        "(`invalid_state`, `fields` names each field); a `reference` of a "
                        "schedule's runs (`reference_reserved`)."),
            **NOT_ALLOWED,
            409: error_response("Another instance of the workflow has that `reference` "
                                "(`reference_taken`; `id` names it if you may see it)."),
            413: error_response("The state (or the body) is larger than the limit."),
            422: error_response("The Idempotency-Key was already used for a different request.")}),
)
class InstanceViewSet(CommandActions, WorkflowsAPIView,
                      viewsets.GenericViewSet[WorkflowInstance]):
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
    commands = engine.ACTIONS  # POST /api/instances/<id>/<name>/ for each
    operation_prefix = "instances"

    @classmethod
    def responses_of(cls, declared: type[engine.PersonCommand]) -> dict[int, Any]:
        return ACTION_RESPONSES

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the types
            return WorkflowInstance.objects.none()
        return visible_instances(self.request.user)

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        # What the browsable API's form for an action sends (a command's: CommandActions);
        # every answer is an instance.
        if self.action == "create":
            return CreateInstanceSerializer
        if self.action == "state":
            return StateSerializer
        return InstanceSerializer

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

    def answer(self, instance: WorkflowInstance, status_code: int = status.HTTP_200_OK
               ) -> Response:
        """The instance after a change, rendered once the transaction committed."""
        headers = {"ETag": etag(instance.revision)}
        if getattr(instance, "replayed", False):
            headers["Idempotent-Replayed"] = "true"
        if status_code == status.HTTP_201_CREATED:
            headers["Location"] = self.location_of(instance)
        return Response(self.represent(instance), status=status_code, headers=headers)

    def create(self, request: Request) -> Response:
        serializer = CreateInstanceSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            instance = services.create(data["workflow"], state=data.get("state"),
                                       start=data["start"], reference=data.get("reference"),
                                       user=request.user,
                                       idempotency_key=idempotency_key(request))
        except ReferenceTaken as taken:
            if sees(request.user, taken.existing):
                raise
            # Taken, but by an instance that is as if it did not exist: no id.
            raise WorkflowNotMoved(taken.reason, taken.code) from None
        return self.answer(instance, status.HTTP_201_CREATED)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        return Response(self.represent(instance), headers={"ETag": etag(instance.revision)})

    def give(self, request: Request, declared: type[engine.PersonCommand]) -> Response:
        """Give the command ``declared`` to the instance, with what the body says it takes."""
        instance = self.get_object()
        taken = self.taken(request, declared)
        key = idempotency_key(request)
        moved = services.execute(
            instance, declared(**taken), user=request.user,
            expected_revision=expected_revision(request), idempotency_key=key,
            # The whole body: the same key with anything else in it is another request.
            fingerprint=fingerprint_of(declared.name, str(instance.pk), request.data)
            if key else None)
        return self.answer(moved)

    @described(operation_id="instances_update_state",
               summary="Replace the state, or merge into it (JSON Merge Patch)",
               description="The body is `{\"state\": {...}}` and nothing else. "
                           "`application/json`: `state` replaces the whole state. "
                           "`application/merge-patch+json` (RFC 7396): `state` is merged into "
                           "it, under the row lock: a key set to null is removed, an object is "
                           "merged key by key, any other value replaces the old one; `{}` is "
                           "the empty patch (no key changes). Any other key of the body "
                           "answers 400 `invalid`, naming it in `fields`.",
               request={"application/json": StateSerializer,
                        MergePatchParser.media_type: StatePatchSerializer},
               parameters=[IF_MATCH, ETAG], responses={
                       200: OpenApiResponse(InstanceSerializer, description="The instance."),
                       400: error_response("Bad input (`invalid`: e.g. a body that is not "
                                           "`{\"state\": {...}}`), or a state that breaks the "
                                           "definition's schema (`invalid_state`; `fields` "
                                           "names each field)."),
                       **NOT_ALLOWED, 404: UNKNOWN_INSTANCE,
                       409: error_response("Refused by a rule (e.g. `cancelled`), or `busy`."),
                       412: ACTION_RESPONSES[412],
                       413: error_response("The state (or the body) is larger than the limit.")})
    @action(detail=True, methods=["patch"], url_path="state",
            parser_classes=[JSONBodyParser, MergePatchParser])
    def state(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        merged = is_merge_patch(request)
        check_state_body(request.data, merged=merged)  # never a 200 that changed nothing
        if merged:
            patch = StatePatchSerializer(data=request.data)
            patch.is_valid(raise_exception=True)
            # Merged into the state as it is under the row lock: no concurrent change is lost.
            value: Any = partial(merge_patch, patch=patch.validated_data.get("state", {}))
        else:
            serializer = StateSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            value = serializer.validated_data["state"]
        moved = services.update_state(instance, value, user=request.user,
                                      expected_revision=expected_revision(request))
        return self.answer(moved)

    @described(summary="The event log, oldest first", responses={
        200: EventSerializer(many=True), **NOT_ALLOWED, 404: UNKNOWN_INSTANCE})
    @action(detail=True, methods=["get"], filter_backends=[])
    def events(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        events = WorkflowEvent.objects.filter(instance=instance).order_by("sequence")
        page = self.paginate_queryset(events)
        return self.get_paginated_response(EventSerializer(page, many=True).data)

    @described(summary="An operation's journal, oldest first",
               description="The steps and waits its durable code recorded in its current "
                           "run (a rollback starts a new one), each with its times, tries "
                           "and result. What the code waits for now is the instance's "
                           "`waiting` (its `operation` names it). `POST .../retry/` with "
                           "`operation` and `from_step` retries from one of these entries.",
               parameters=[OpenApiParameter("operation", str, OpenApiParameter.PATH,
                                            description="The operation's id.")],
               responses={200: JournalEntrySerializer(many=True), **NOT_ALLOWED,
                          404: error_response("No such instance, or one you may not see; "
                                              "or the instance has no such operation.")})
    @action(detail=True, methods=["get"], filter_backends=[],
            url_path=r"operations/(?P<operation>[^/]+)/journal")
    def journal(self, request: Request, pk: str | None = None, operation: str | None = None
                ) -> Response:
        instance = self.get_object()
        found = instance.snap.operation(operation or "")
        if found is None:
            raise exceptions.NotFound(f'The instance has no operation "{operation}".')
        entries = JournalEntry.objects.filter(instance=instance, journal=found.journal or "")
        page = self.paginate_queryset(entries.order_by("position"))
        return self.get_paginated_response(JournalEntrySerializer(page, many=True).data)

    @described(summary="Every task of the instance, oldest first: open, done and cancelled",
               description="To whoever may see the instance, whether or not the tasks are "
                           "theirs to do (`GET /api/tasks/` lists those).",
               responses={200: TaskSerializer(many=True), **NOT_ALLOWED, 404: UNKNOWN_INSTANCE})
    @action(detail=True, methods=["get"], filter_backends=[])
    def tasks(self, request: Request, pk: str | None = None) -> Response:
        instance = self.get_object()
        tasks = WorkflowTask.objects.filter(instance=instance).order_by("created_at", "id")
        page = self.paginate_queryset(tasks)
        return self.get_paginated_response(TaskSerializer(page, many=True).data)
