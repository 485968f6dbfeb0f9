"""``POST /api/signals/``: a signal sent to the instances of a workflow (``docs/api.md``).

The view checks the body's shape and hands it to ``services.signal``, which judges who
may send it, records it, and hands it to each instance it reaches under that instance's
row lock. The ``message_id`` is the idempotency: the same id again answers what became
of the first, with ``Idempotent-Replayed: true``, and changes nothing.
"""

from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import registry, services
from ..models import SignalStatus, WorkflowInstance, WorkflowSignal
from ..reading.queries import live_attempts
from ..services.access import VIEW, definition_allows, visible_instances
from .commands import JSONValueField
from .errors import error_body
from .schema import NOT_ALLOWED, described, error_response
from .serializers import InstanceSerializer, ReferenceField, children_of
from .views import WorkflowsAPIView

ADDRESSES = ("instance", "reference", "correlation")
ONE_ADDRESS = "Address the signal with exactly one of instance, reference and correlation."


class SendSignalSerializer(serializers.Serializer[Any]):
    """What ``POST /api/signals/`` takes: the signal, its payload, and one address."""

    workflow = serializers.ChoiceField(choices=[], help_text="The workflow's id.")
    signal = ReferenceField(max_length=200, help_text="The signal's name, as a step of the "
                                                 "workflow waits for it.")
    payload = JSONValueField(required=False, allow_null=True, default=None, help_text=(
        "Any JSON value (default null); the signal's schema, if it has one, checks it."))
    instance = serializers.UUIDField(required=False, allow_null=True,
                                     help_text="Address: one instance, by its id.")
    reference = ReferenceField(required=False, allow_null=True, max_length=200,
                          help_text="Address: the instance with this reference.")
    correlation = ReferenceField(required=False, allow_null=True, max_length=200, help_text=(
        "Address: every instance waiting for the signal with this correlation value."))
    message_id = ReferenceField(required=False, allow_null=True, max_length=200, help_text=(
        "The sender's id of the message: the same id again is acknowledged and changes "
        "nothing."))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        workflow = cast(serializers.ChoiceField, self.fields["workflow"])
        workflow.choices = sorted(d.id for d in registry.all_definitions())

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in ADDRESSES if attrs.get(name) is not None]
        if len(given) != 1:  # none: each could be the one; several: the ones given
            raise serializers.ValidationError({name: [ONE_ADDRESS]
                                               for name in (given or ADDRESSES)})
        return attrs


@extend_schema_field({"type": "string", "enum": list(SignalStatus.values), "description": (
    "`taken` by the instances that waited for it, `kept` for a step that will wait for it, "
    "`held` by a paused instance until it resumes, `expired` (kept longer than "
    "SIGNAL_RETENTION), `refused` (kept, then refused by the instance that would take it).")})
class SignalStatusField(serializers.CharField):
    pass


class SignalSerializer(serializers.ModelSerializer[WorkflowSignal]):
    """A signal as it was recorded, and what became of it."""

    status = SignalStatusField(read_only=True)
    repeated = serializers.SerializerMethodField()

    class Meta:
        model = WorkflowSignal
        fields = ["id", "workflow", "name", "message_id", "status", "received_at", "taken_at",
                  "repeated"]
        read_only_fields = fields

    @extend_schema_field({"type": "boolean", "description": "A message id seen before: this "
                                                            "is what became of the first."})
    def get_repeated(self, row: WorkflowSignal) -> bool:
        return bool(self.context.get("repeated"))


SENT = inline_serializer("SignalSent", fields={
    "signal": SignalSerializer(),
    "instances": InstanceSerializer(many=True, help_text=(
        "The instances that took it, as GET shows them (those you may see); empty when "
        "it was kept."))})
REPLAYED = OpenApiParameter(
    "Idempotent-Replayed", str, OpenApiParameter.HEADER, response=[200, 202, 409],
    description="`true` when the message id was seen before: the answer is what became of "
                "the first, and nothing changed.")


class SignalView(WorkflowsAPIView, APIView):
    """Send a signal to the instances of a workflow that wait for it."""

    @described(
        operation_id="signals_send", summary="Send a signal to a workflow's instances",
        description="Address it with exactly one of `instance`, `reference` (the one instance "
                    "with it) or `correlation` (every instance waiting for the signal with "
                    "that value). A signal that comes before its step waits is kept, and the "
                    "step takes it when it starts waiting.",
        request=SendSignalSerializer, parameters=[REPLAYED], responses={
            200: OpenApiResponse(SENT, description="Taken: the instances moved on."),
            202: OpenApiResponse(SENT, description="Kept for a step that will wait for it; "
                                                   "`instances` is empty."),
            400: error_response(
                "A malformed body; no address or more than one (`fields` names them); a "
                "signal no step of the workflow waits for (`unknown_signal`); a payload "
                "that breaks the signal's schema (`invalid_payload`; `fields` names each "
                "field as `payload.<field>`)."),
            **NOT_ALLOWED,
            403: error_response("You may not send this signal: that needs the change "
                                "permission on workflow instances, or a place among the "
                                "signal's `senders`."),
            404: error_response("The workflow has no such instance or reference."),
            409: error_response("The instance is finished (`not_waiting`), or its row stayed "
                                "locked (`busy`: the signal is kept, and handed over by the "
                                "sweep)."),
            413: error_response("The payload (or the body) is larger than the limit."),
        })
    def post(self, request: Request) -> Response:
        body = SendSignalSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        sent = services.signal(
            data["workflow"], data["signal"], data["payload"],
            instance=None if data.get("instance") is None else str(data["instance"]),
            reference=data.get("reference"), correlation=data.get("correlation"),
            message_id=data.get("message_id"), user=request.user)
        headers = {"Idempotent-Replayed": "true"} if sent.repeated else {}
        if sent.signal.status == SignalStatus.REFUSED:  # a repeat: the first was refused
            why = sent.signal.detail or "the instance it was for no longer waited for it"
            return Response(error_body(f'The signal "{sent.signal.name}" with this message id '
                                       f"was refused ({why}). Nothing changed.", "not_waiting"),
                            status=status.HTTP_409_CONFLICT, headers=headers)
        order = {pk: index for index, pk in enumerate(sent.signal.taken_by)}
        taken = sorted(sent.taken_by, key=lambda row: order.get(str(row.pk), len(order)))
        shown = seen_by(request.user, taken)
        answer = {
            "signal": SignalSerializer(sent.signal, context={"repeated": sent.repeated}).data,
            "instances": InstanceSerializer(shown, many=True, context={
                "request": request, "children": children_of(shown),
                "attempts": live_attempts(shown)}).data,
        }
        return Response(answer, headers=headers, status=status.HTTP_200_OK if sent.taken_by
                        else status.HTTP_202_ACCEPTED)


def seen_by(user: Any, instances: list[WorkflowInstance]) -> list[WorkflowInstance]:
    """Those of ``instances`` that ``user`` may see, in their order: a sender need not be
    one who may read the instances it moves."""
    visible = set(visible_instances(user).filter(pk__in=[i.pk for i in instances])
                  .values_list("pk", flat=True))
    return [i for i in instances
            if i.pk in visible and definition_allows(user, i.workflow, i, VIEW)]
