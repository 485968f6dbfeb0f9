"""A task as the API shows it: in the task list, on its own, and in an instance's tasks."""

from __future__ import annotations

from typing import Any

from django.db.models import Manager, QuerySet
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from ..models import WorkflowTask
from ..reading import inbox
from ..reading.queries import form_of
from .serializers import AnyField

# One line of what a task shows the person deciding (``Task(show=...)``), for the schema.
SHOWN = inline_serializer("Shown", fields={
    "label": serializers.CharField(read_only=True),
    "value": serializers.JSONField(
        read_only=True, allow_null=True,
        help_text="As the instance's state holds it now; null when missing or not shown."),
    "link": serializers.URLField(read_only=True, allow_null=True,
                                 help_text="The value, when it is an http(s) URL."),
    "problem": serializers.ChoiceField(
        choices=["missing", "error"], read_only=True, allow_null=True,
        help_text="missing: the state has no such key; error: the task's show failed "
                  "(logged). null: the value is shown."),
})


# The instance at the top of the task's instance (itself when it is not nested).
ROOT = inline_serializer("TaskRoot", fields={
    "id": serializers.UUIDField(read_only=True),
    "workflow": serializers.CharField(read_only=True),
    "reference": serializers.CharField(read_only=True, allow_null=True),
})


class TaskListSerializer(serializers.ListSerializer[WorkflowTask]):
    """A page of tasks, loaded again in one query with what each shows and its root."""

    def to_representation(self, data: Any) -> list[Any]:
        tasks = data.all() if isinstance(data, Manager | QuerySet) else data
        return super().to_representation(inbox.reloaded(tasks))


class TaskSerializer(serializers.ModelSerializer[WorkflowTask]):
    """A task, as ``GET /api/tasks/<id>/`` returns it."""

    form = serializers.SerializerMethodField()
    candidates = serializers.ListField(child=serializers.CharField(), read_only=True)
    claimed_by = serializers.IntegerField(source="claimed_by_id", read_only=True,
                                          allow_null=True, help_text="The user's id.")
    completed_by = serializers.IntegerField(source="completed_by_id", read_only=True,
                                            allow_null=True, help_text="The user's id.")
    input = serializers.DictField(read_only=True, allow_null=True)
    shows = serializers.SerializerMethodField()
    reference = serializers.CharField(source="instance.reference", read_only=True,
                                      allow_null=True, help_text="The instance's reference.")
    owner = serializers.IntegerField(source="instance.owner_id", read_only=True,
                                     allow_null=True, help_text="The instance owner's user id.")
    owner_name = serializers.SerializerMethodField()

    class Meta:
        model = WorkflowTask
        fields = ["id", "instance", "workflow", "step", "title", "form", "status",
                  "candidates", "claimed_by", "completed_by", "input", "due_at", "overdue",
                  "created_at", "completed_at", "shows", "reference", "owner", "owner_name"]
        read_only_fields = fields
        list_serializer_class = TaskListSerializer

    def get_fields(self) -> dict[str, AnyField]:
        # instance and root: named as a serializer's own attributes, so not declared on the
        # class (see ErrorSerializer); root comes last.
        fields = super().get_fields()
        fields["instance"] = serializers.UUIDField(source="instance_id", read_only=True)
        return {**fields, "root": serializers.SerializerMethodField()}

    def get_form(self, task: WorkflowTask) -> dict[str, Any] | None:
        """The input's JSON Schema."""
        return form_of(task)

    @extend_schema_field(serializers.ListSerializer(child=SHOWN))
    def get_shows(self, task: WorkflowTask) -> list[dict[str, Any]]:
        """What the task shows the person deciding, read from its instance's state now."""
        request = self.context.get("request")
        return [line.as_dict() for line in inbox.shown_for(
            task, task.instance, getattr(request, "user", None))]

    def get_owner_name(self, task: WorkflowTask) -> str | None:
        """The instance owner's username."""
        return inbox.owner_name(task.instance)

    @extend_schema_field(ROOT)
    def get_root(self, task: WorkflowTask) -> dict[str, Any]:
        """The instance at the top: for a nested workflow's task, the one it is part of
        (alice's onboarding); else the task's own instance."""
        root = inbox.root_of(task.instance)
        return {"id": str(root.pk), "workflow": root.workflow, "reference": root.reference}
