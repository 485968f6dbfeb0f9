"""What the API reads and writes: the representations ``docs/api.md`` shows, and input checks."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, cast, get_args

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .. import clock, engine, registry, services
from ..engine import BranchSnapshot, Workflow
from ..engine.feedback import Phase
from ..engine.journal import EntryKind
from ..engine.snapshot import BranchStatus, OperationStatus
from ..graph import graph_of
from ..inputs.storable import json_problems
from ..models import JournalEntry, WorkflowEvent, WorkflowInstance
from ..reading.queries import LiveOperation, live_operations
from ..reading.waiting import waiting_of

OPERATION_STATUSES = list(get_args(OperationStatus))
BRANCH_STATUSES = list(get_args(BranchStatus))

NULLABLE_STRING = {"type": "string", "nullable": True}

_datetime = serializers.DateTimeField()
AnyField = serializers.Field[Any, Any, Any, Any]


def _iso(epoch: float | None) -> str | None:
    """An engine time (epoch seconds) as the API writes times."""
    return None if epoch is None else _datetime.to_representation(
        datetime.fromtimestamp(epoch, tz=UTC))


class StateField(serializers.DictField):
    """A JSON object that a database can store."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        problems = json_problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value


class ReferenceField(serializers.CharField):
    """A reference: printable text a database can store (blank text is refused as blank),
    and text as the schema says: a number is not taken for its digits (an order number
    sent as a number was most likely meant as another value)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if json_problems(value):
            raise serializers.ValidationError("This text must not contain NUL characters or "
                                              "unpaired surrogates.")
        return value


# -- input ---------------------------------------------------------------------------


class CreateInstanceSerializer(serializers.Serializer[Any]):
    workflow = serializers.ChoiceField(choices=[], help_text="The workflow's id.")
    state = StateField(required=False, help_text="The initial state; default: the "
                                                  "definition's initial state.")
    start = serializers.BooleanField(default=False, help_text="Start it at once.")
    reference = ReferenceField(required=False, allow_null=True, max_length=200,
                               help_text="Your own name for it (an order number): at most "
                                         "one instance per workflow has it. A schedule's "
                                         "workflow refuses those of its runs, "
                                         '"<schedule id>@...".')

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        workflow = cast(serializers.ChoiceField, self.fields["workflow"])
        workflow.choices = sorted(d.id for d in registry.all_definitions())

    def validate_workflow(self, value: str) -> str:
        definition = registry.find(value)
        if definition is not None and definition.nested_only:
            raise serializers.ValidationError(
                f'"{value}" only runs as the nested child of another workflow; create that '
                "one instead.", code="nested_only")
        return value


class StateSerializer(serializers.Serializer[Any]):
    state = StateField(help_text="The new state: it replaces the old one.")


class StatePatchSerializer(serializers.Serializer[Any]):
    """A JSON Merge Patch (RFC 7396) of the body {"state": ...}: only what it names changes."""

    state = StateField(required=False, help_text=(
        "Merged into the state: a key set to null is removed, an object is merged key by "
        "key, any other value replaces the old one; keys not named are kept."))


class ErrorSerializer(serializers.Serializer[Any]):
    """Every error body: ``detail`` for people, ``code`` for programs."""

    detail = serializers.CharField()
    code = serializers.CharField()

    def get_fields(self) -> dict[str, AnyField]:
        # A field named as an attribute of a serializer's own (fields, errors, data, source,
        # root, instance) is made here, not declared on the class, where it would hide that.
        return {**super().get_fields(), "fields": serializers.DictField(
                    child=serializers.ListField(child=serializers.CharField()), required=False,
                    help_text="Input errors: each bad field's dotted name and its messages."),
                "id": serializers.UUIDField(
                    required=False, help_text="`reference_taken`: the instance that has the "
                    "reference, if you may see it (else no `id`).")}


# -- instances -----------------------------------------------------------------------


class ProgressSerializer(serializers.Serializer[Any]):
    current = serializers.FloatField()
    total = serializers.FloatField(allow_null=True)
    message = serializers.CharField(allow_null=True)


class FeedbackSerializer(serializers.Serializer[Any]):
    phase = serializers.ChoiceField(choices=list(get_args(Phase)))
    percent = serializers.IntegerField(allow_null=True)
    message = serializers.CharField(allow_null=True)


class ErrorInfoSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    message = serializers.CharField()


@extend_schema_field({"type": "array", "items": {"$ref": "#/components/schemas/Operation"}})
class OperationChildrenField(serializers.ListField):
    pass


@extend_schema_field({"type": "string", "enum": OPERATION_STATUSES})
class OperationStatusField(serializers.CharField):
    pass


@extend_schema_field({"type": "string", "enum": BRANCH_STATUSES})
class BranchStatusField(serializers.CharField):
    pass


# drf-spectacular names the instances' status enum after the one component that
# declares it ("Instance"); the short form refers to it rather than declaring it
# again, which would leave three "status" enums without a clear name each.
@extend_schema_field({"$ref": "#/components/schemas/InstanceStatusEnum"})
class InstanceStatusField(serializers.CharField):
    pass


class OperationSerializer(serializers.Serializer[Any]):
    """One operation of the current step's work (children nested)."""

    id = serializers.CharField()
    step = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    status = OperationStatusField()
    attempt = serializers.IntegerField()
    progress = ProgressSerializer(allow_null=True)
    result = serializers.JSONField(allow_null=True)
    error = ErrorInfoSerializer(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    retry_at = serializers.DateTimeField(allow_null=True, help_text="When a waiting "
                                                                     "operation tries again.")
    heartbeat_at = serializers.DateTimeField(allow_null=True, help_text="The running "
                                                                         "attempt's last sign.")
    waiting_for = serializers.CharField(allow_null=True, help_text=(
        "What its attempt waits for, held back by its `Limit` or `Rate` (its status stays "
        "`queued`): `waiting for a slot (merchant-7: 2 of 2 running)`; null otherwise."))
    metadata = serializers.DictField()
    logs = serializers.ListField(child=serializers.CharField())
    feedback = FeedbackSerializer(help_text="How to show it now: `none` (finished, or just "
                                            "started), `activity`, `determinate` (a "
                                            "percent), `indeterminate`, `status` (stalled).")
    children = OperationChildrenField()


class BranchSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    step = serializers.CharField()
    status = BranchStatusField()
    error = serializers.CharField(allow_null=True)


def operation_view(live: LiveOperation, now: float) -> dict[str, Any]:
    """An operation as the API shows it: times in ISO 8601, no fencing token."""
    op = live.operation
    return {
        "id": op.id, "step": op.step, "title": op.title or op.id,
        "description": op.description, "status": op.status, "attempt": op.attempt,
        "progress": asdict(op.progress) if op.progress is not None else None,
        "result": op.result, "error": asdict(op.error) if op.error is not None else None,
        "started_at": _iso(op.started_at), "completed_at": _iso(op.completed_at),
        "retry_at": _iso(op.retry_at),
        "heartbeat_at": None if live.heartbeat_at is None
        else _datetime.to_representation(live.heartbeat_at),
        "waiting_for": live.waiting_for or None,
        "metadata": dict(op.metadata), "logs": list(op.logs),
        "feedback": asdict(engine.feedback(op, now)),
        "children": [operation_view(LiveOperation(child), now) for child in op.children],
    }


def branch_view(branch: BranchSnapshot) -> dict[str, Any]:
    return {"id": branch.id, "step": branch.step, "status": branch.status,
            "error": branch.error}


VERDICT_SCHEMA = {
    "type": "object", "required": ["allowed", "code", "message"],
    "properties": {
        "allowed": {"type": "boolean"},
        "code": {**NULLABLE_STRING, "description": "Why not, for programs."},
        "message": {**NULLABLE_STRING, "description": "Why not, for people."},
        "confirm": {**NULLABLE_STRING, "description": (
            "When allowed: why a person should confirm it first (back reopens a completed "
            "instance), or null.")},
    },
}


class ActionsField(serializers.SerializerMethodField):
    """An instance's ``actions``: for each command, would it be accepted now?"""


class ActionsFieldSchema(OpenApiSerializerFieldExtension):
    """The schema of ``actions``: a verdict for each command offered as an action, as the
    commands are declared when the schema is made."""

    target_class = ActionsField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "object",
                "description": "For each command: would it be accepted now, for you?",
                "properties": dict.fromkeys(engine.ACTIONS, VERDICT_SCHEMA),
                "required": list(engine.ACTIONS)}


class NestedInstanceSerializer(serializers.Serializer[Any]):
    """The current step's nested child instance, in short."""

    id = serializers.UUIDField()
    workflow = serializers.CharField()
    status = InstanceStatusField()
    current_step = serializers.CharField(allow_null=True)


# Inline enums: two components' "kind" enums with other values would collide by name.
@extend_schema_field({"type": "string", "enum": ["signal", "timer", "task"]})
class WaitingKindField(serializers.CharField):
    pass


class WaitingSerializer(serializers.Serializer[Any]):
    """What the instance waits for now: a signal, a timer, or a person's task."""

    kind = WaitingKindField()
    name = serializers.CharField(allow_null=True, help_text="The signal's name, or the task's "
                                                            "title; null for a timer.")
    correlation = serializers.CharField(allow_null=True, help_text="The value a signal is "
                                                                   "correlated on, if any.")
    until = serializers.DateTimeField(allow_null=True, help_text=(
        "When the signal's timeout passes, the timer falls due, or the task is due; null "
        "where there is no such time."))
    operation = serializers.CharField(allow_null=True, help_text=(
        "The operation whose durable code waits (`ctx.sleep`, `ctx.wait_for_signal`, "
        "`ctx.ask`); null when the step itself waits."))
    position = serializers.IntegerField(allow_null=True, help_text=(
        "The position of the entry of that operation's journal that waits; null when the "
        "step itself waits."))
    task = serializers.CharField(allow_null=True, help_text=(
        "The task's id (`GET /api/tasks/<id>/`), when a person's task is waited for."))


class HeldSerializer(serializers.Serializer[Any]):
    command = serializers.CharField(help_text="What came: `attempt_finished`, "
                                              "`attempt_interrupted`, `deadline_due`, `signal`.")
    at = serializers.DateTimeField()


class PausedSerializer(serializers.Serializer[Any]):
    """A paused instance: since when, by whom, why, and what came back meanwhile."""

    since = serializers.DateTimeField()
    by = serializers.CharField(allow_null=True, help_text="The id of the user who paused it "
                                                           "(as text); null for code.")
    reason = serializers.CharField(allow_null=True)
    resumes_to = InstanceStatusField(help_text="The status `resume` gives back.")
    held = HeldSerializer(many=True, help_text="What came back while paused, applied on "
                                               "resume in this order.")


class StandingSerializer(serializers.Serializer[Any]):
    """Where an instance stood when its rollback started."""

    status = InstanceStatusField()
    current_step = serializers.CharField(allow_null=True)
    history = serializers.ListField(child=serializers.CharField())
    completed_steps = serializers.ListField(child=serializers.CharField())
    skipped_steps = serializers.ListField(child=serializers.CharField())
    state = serializers.DictField()
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)


class CompensationSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=["operation", "branch", "nested", "step"])
    target = serializers.CharField(help_text="The operation (its path of ids), branch, child "
                                             "instance or step undone.")
    step = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])
    result = serializers.JSONField(allow_null=True, help_text="What the compensation "
                                                              "returned (a refund's id).")
    error = serializers.CharField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RolledBackSerializer(serializers.Serializer[Any]):
    """The last rollback that finished: what it undid and how, when and by whom."""

    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    by = serializers.CharField(allow_null=True, help_text="The id of the user who rolled it "
                                                           "back (as text); null for code.")
    before = StandingSerializer(allow_null=True)
    compensations = CompensationSerializer(many=True)


def paused_view(paused: engine.PauseSnapshot | None) -> dict[str, Any] | None:
    if paused is None:
        return None
    return {"since": _iso(paused.at), "by": paused.by, "reason": paused.reason,
            "resumes_to": paused.status,
            "held": [{"command": held.command, "at": _iso(held.at)} for held in paused.held]}


def rolled_back_view(plan: engine.RollbackPlan | None) -> dict[str, Any] | None:
    if plan is None:
        return None
    before = plan.before
    return {
        "started_at": _iso(plan.started_at), "finished_at": _iso(plan.finished_at),
        "by": plan.by,
        "before": None if before is None else {
            "status": before.status, "current_step": before.current_step,
            "history": list(before.history), "completed_steps": list(before.completed_steps),
            "skipped_steps": list(before.skipped_steps), "state": dict(before.state),
            "started_at": _iso(before.started_at), "completed_at": _iso(before.completed_at)},
        "compensations": [{
            "kind": item.kind, "target": "/".join((*item.path, item.target)),
            "step": item.step, "status": item.status, "result": item.result,
            "error": item.error, "finished_at": _iso(item.finished_at)} for item in plan.items],
    }


class InstanceSerializer(serializers.ModelSerializer[WorkflowInstance]):
    """An instance, as ``GET /api/instances/<uuid>/`` returns it."""

    current_step = serializers.SerializerMethodField()
    completed_steps = serializers.ListField(child=serializers.CharField(), read_only=True)
    skipped_steps = serializers.ListField(child=serializers.CharField(), read_only=True)
    history = serializers.ListField(child=serializers.CharField(), read_only=True)
    state = serializers.DictField(read_only=True)
    operations = serializers.SerializerMethodField()
    parallel = serializers.SerializerMethodField()
    nested = serializers.SerializerMethodField()
    waiting = serializers.SerializerMethodField()
    paused = serializers.SerializerMethodField()
    rolled_back = serializers.SerializerMethodField()
    actions = ActionsField()

    class Meta:
        model = WorkflowInstance
        fields = ["id", "workflow", "version", "status", "state", "current_step",
                  "completed_steps", "skipped_steps", "history", "errors", "operations",
                  "parallel", "nested", "revision", "created_at", "updated_at", "started_at",
                  "completed_at", "reference", "waiting", "paused", "rolled_back", "actions"]
        read_only_fields = fields

    def get_fields(self) -> dict[str, AnyField]:
        fields = super().get_fields()
        fields["errors"] = serializers.ListField(  # not declared: as ErrorSerializer's fields
            child=serializers.CharField(), read_only=True)
        return fields

    @extend_schema_field(NULLABLE_STRING)
    def get_current_step(self, instance: WorkflowInstance) -> str | None:
        return instance.current_step or None

    @extend_schema_field(OperationSerializer(many=True))
    def get_operations(self, instance: WorkflowInstance) -> list[dict[str, Any]]:
        attempts = self.context.get("attempts")  # a list's, read once for the page
        now = clock.now()
        return [operation_view(op, now) for op in live_operations(instance, attempts)]

    @extend_schema_field(BranchSerializer(many=True))
    def get_parallel(self, instance: WorkflowInstance) -> list[dict[str, Any]]:
        return [branch_view(branch) for branch in instance.snap.parallel]

    def get_actions(self, instance: WorkflowInstance) -> dict[str, dict[str, Any]]:
        request = self.context.get("request")
        user = getattr(request, "user", None)
        verdicts = services.applies(instance, user=user, commands=engine.ACTIONS.values(),
                                    running=self.context.get("attempts"))
        return {name: asdict(verdict) for name, verdict in verdicts.items()}

    @extend_schema_field(NestedInstanceSerializer(allow_null=True))
    def get_nested(self, instance: WorkflowInstance) -> dict[str, Any] | None:
        if not instance.nested_id:
            return None
        children = self.context.get("children")
        if children is not None and instance.nested_id in children:
            child = children[instance.nested_id]
        else:
            child = WorkflowInstance.objects.filter(pk=instance.nested_id).only(
                "id", "workflow", "status", "current_step").first()
        if child is None:
            return None
        return {"id": str(child.pk), "workflow": child.workflow, "status": child.status,
                "current_step": child.current_step or None}

    @extend_schema_field(PausedSerializer(allow_null=True))
    def get_paused(self, instance: WorkflowInstance) -> dict[str, Any] | None:
        return paused_view(instance.snap.paused)

    @extend_schema_field(RolledBackSerializer(allow_null=True))
    def get_rolled_back(self, instance: WorkflowInstance) -> dict[str, Any] | None:
        return rolled_back_view(instance.snap.rolled_back)

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, instance: WorkflowInstance) -> dict[str, Any] | None:
        waiting = waiting_of(instance.snap)
        if waiting is None:
            return None
        return {"kind": waiting.kind, "name": waiting.name, "correlation": waiting.correlation,
                "until": None if waiting.until is None
                else _datetime.to_representation(waiting.until),
                "operation": waiting.operation, "position": waiting.position,
                "task": waiting.task}


def children_of(instances: list[WorkflowInstance]) -> dict[str, WorkflowInstance]:
    """The nested children of a page of instances, in one query."""
    ids = [i.nested_id for i in instances if i.nested_id]
    if not ids:
        return {}
    rows = WorkflowInstance.objects.filter(pk__in=ids).only(
        "id", "workflow", "status", "current_step")
    return {str(row.pk): row for row in rows}


@extend_schema_field({"type": "string", "enum": list(get_args(EntryKind)),
                      "description": "A step (`ctx.step`), a wait (`sleep`, `signal`, `task`) "
                                     "or a patch (`ctx.patched`)."})
class JournalKindField(serializers.CharField):
    pass


class JournalEntrySerializer(serializers.ModelSerializer[JournalEntry]):
    """One entry of an operation's journal (durable code): a step or a wait that ended."""

    kind = JournalKindField(read_only=True)
    value = serializers.JSONField(allow_null=True, read_only=True, help_text=(
        "A step's result; a wait's `{\"value\": the signal's payload or the task's decision, "
        "\"timed_out\": bool}`; null for a patch."))
    tries = serializers.IntegerField(read_only=True, help_text=(
        "Calls of the step's function it took (its own `retries`)."))
    started_at = serializers.DateTimeField(allow_null=True, read_only=True, help_text=(
        "When the step was first called, or the wait began."))
    finished_at = serializers.DateTimeField(read_only=True, help_text=(
        "When the step returned, or the wait ended."))

    class Meta:
        model = JournalEntry
        fields = ["position", "name", "kind", "value", "tries", "started_at", "finished_at"]
        read_only_fields = fields


@extend_schema_field({"type": "string", "enum": list(engine.EVENT_TYPES), "description": (
    "What happened (engine/events.py declares each type, and what it means).")})
class EventTypeField(serializers.CharField):
    pass


class EventSerializer(serializers.ModelSerializer[WorkflowEvent]):
    """One entry of an instance's event log."""

    type = EventTypeField(read_only=True)
    step = serializers.SerializerMethodField()
    actor = serializers.SerializerMethodField()
    error = serializers.JSONField(allow_null=True, read_only=True)

    class Meta:
        model = WorkflowEvent
        fields = ["sequence", "type", "step", "actor", "revision", "error", "data",
                  "created_at"]
        read_only_fields = fields

    def get_fields(self) -> dict[str, AnyField]:
        fields = super().get_fields()
        fields["data"] = serializers.DictField(read_only=True)  # as ErrorSerializer's fields
        return fields

    @extend_schema_field(NULLABLE_STRING)
    def get_step(self, event: WorkflowEvent) -> str | None:
        return event.step or None

    @extend_schema_field({"type": "integer", "nullable": True,
                          "description": "The acting user's id."})
    def get_actor(self, event: WorkflowEvent) -> Any:
        return event.actor_id


# -- definitions ---------------------------------------------------------------------


class StepSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    title = serializers.CharField()
    advance = serializers.ChoiceField(choices=["manual", "auto"])
    skippable = serializers.BooleanField(help_text="False: `skip` is refused on this step.")


class TransitionSerializer(serializers.Serializer[Any]):
    target = serializers.CharField()
    guarded = serializers.BooleanField(help_text="It has a `when` guard.")

    def get_fields(self) -> dict[str, AnyField]:
        # source first, not declared: as ErrorSerializer's fields (Field.source).
        return {"source": serializers.CharField(), **super().get_fields()}


@extend_schema_field({"type": "string", "enum": ["signal", "timer"]})
class StepWaitKindField(serializers.CharField):
    pass


class StepWaitSerializer(serializers.Serializer[Any]):
    kind = StepWaitKindField()
    name = serializers.CharField(allow_null=True, help_text="The signal's name; null for a "
                                                            "timer.")


class GraphNodeSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    title = serializers.CharField()
    initial = serializers.BooleanField()
    advance = serializers.ChoiceField(choices=["manual", "auto"])
    conditional = serializers.BooleanField()
    operations = serializers.ListField(child=serializers.CharField())
    parallel = serializers.ListField(child=serializers.CharField())
    nested = serializers.CharField(allow_null=True)
    timeout = serializers.FloatField(allow_null=True)
    wait = StepWaitSerializer(allow_null=True, help_text="What the step waits for: a signal "
                                                          "(by name) or a timer; null for none.")


class GraphSerializer(serializers.Serializer[Any]):
    nodes = GraphNodeSerializer(many=True)
    edges = TransitionSerializer(many=True)


class WorkflowSerializer(serializers.Serializer[Any]):
    """A definition: its steps and transitions in declaration order."""

    id = serializers.CharField()
    version = serializers.IntegerField()
    title = serializers.CharField()
    steps = serializers.SerializerMethodField()
    transitions = serializers.SerializerMethodField()

    @extend_schema_field(StepSerializer(many=True))
    def get_steps(self, definition: Workflow) -> list[dict[str, Any]]:
        return [{"id": s.id, "title": s.title, "advance": s.advance, "skippable": s.skippable}
                for s in definition.steps]

    @extend_schema_field(TransitionSerializer(many=True))
    def get_transitions(self, definition: Workflow) -> list[dict[str, Any]]:
        return [{"source": t.source, "target": t.target, "guarded": t.when is not None}
                for t in definition.transitions]


class WorkflowDetailSerializer(WorkflowSerializer):
    """A definition with its graph and the JSON Schema its state must satisfy."""

    graph = serializers.SerializerMethodField()
    state_schema = serializers.SerializerMethodField()

    @extend_schema_field(GraphSerializer)
    def get_graph(self, definition: Workflow) -> dict[str, Any]:
        return graph_of(definition)

    @extend_schema_field({"type": "object", "additionalProperties": {}, "nullable": True})
    def get_state_schema(self, definition: Workflow) -> dict[str, Any] | None:
        schema = definition.state_schema
        if isinstance(schema, dict):
            return schema
        if schema is not None and hasattr(schema, "model_json_schema"):  # a pydantic model
            made: dict[str, Any] = schema.model_json_schema()
            return made
        return None
