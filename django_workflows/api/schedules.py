"""Schedules in the API (``docs/schedules.md``): ``GET /api/schedules/`` and one schedule,
read-only, for signed-in users. Pausing is the admin's, or ``services.pause_schedule``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema_view
from rest_framework import exceptions, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from .. import registry
from ..engine.schedules import CATCH_UPS, OVERLAPS, Schedule
from ..models import WorkflowSchedule
from ..services.schedules import runs_of, sync_schedules
from .schema import NOT_ALLOWED, described, error_response
from .views import WorkflowsAPIView


class ScheduleSerializer(serializers.Serializer[Any]):
    """A schedule as the code declares it, and where it stands."""

    id = serializers.CharField()
    workflow = serializers.CharField(help_text="The id of the workflow it starts.")
    cron = serializers.CharField(allow_null=True, help_text="Five fields, read in `timezone`; "
                                 "null for an `every` schedule.")
    every = serializers.IntegerField(allow_null=True, help_text="Seconds between due times, "
                                     "counted from the Unix epoch; null for a cron schedule.")
    timezone = serializers.CharField()
    start = serializers.BooleanField(help_text="Whether its runs are started.")
    overlap = serializers.ChoiceField(choices=OVERLAPS)
    catch_up = serializers.ChoiceField(choices=CATCH_UPS)
    paused = serializers.BooleanField()
    last_due_at = serializers.DateTimeField(allow_null=True,
                                            help_text="The last due time run or skipped.")
    next_due_at = serializers.DateTimeField(allow_null=True,
                                            help_text="The next due time; null while paused.")
    last_run = serializers.UUIDField(allow_null=True, help_text="The last instance it made.")
    skipped = serializers.IntegerField(help_text="Due times skipped while the last run was "
                                       'unfinished (overlap "skip").')
    runs = serializers.IntegerField(help_text='The instances it made: their `reference` is '
                                    '"<id>@<due time in UTC, ISO 8601>".')


def schedule_data(schedule: Schedule, row: WorkflowSchedule | None) -> dict[str, Any]:
    paused = bool(row and row.paused)
    return {
        "id": schedule.id, "workflow": schedule.workflow_id, "cron": schedule.cron,
        "every": schedule.every_seconds, "timezone": schedule.timezone,
        "start": schedule.start, "overlap": schedule.overlap, "catch_up": schedule.catch_up,
        "paused": paused, "last_due_at": row.last_due_at if row else None,
        "next_due_at": None if paused or row is None else row.next_due_at,
        "last_run": row.last_run_id if row else None, "skipped": row.skipped if row else 0,
        "runs": runs_of(schedule.id).count(),
    }


@extend_schema_view(
    list=described(summary="Schedules: the workflows started on a calendar",
                   responses={200: ScheduleSerializer(many=True), **NOT_ALLOWED}),
    retrieve=described(summary="One schedule", parameters=[
        OpenApiParameter("id", str, OpenApiParameter.PATH, description="The schedule's id.")],
        responses={200: ScheduleSerializer, **NOT_ALLOWED,
                   404: error_response("No schedule with that id.")}),
)
class ScheduleViewSet(WorkflowsAPIView, viewsets.ViewSet):
    """The registered schedules, when they last ran and run next (read-only)."""

    lookup_field = "id"
    lookup_value_regex = r"[^/@]+"

    def list(self, request: Request) -> Response:
        sync_schedules()  # a schedule the sweep has not seen yet is listed with its row
        schedules = sorted(registry.all_schedules(), key=lambda s: s.id)
        rows = WorkflowSchedule.objects.in_bulk([s.id for s in schedules])
        return Response(ScheduleSerializer(
            [schedule_data(s, rows.get(s.id)) for s in schedules], many=True).data)

    def retrieve(self, request: Request, id: str | None = None) -> Response:
        schedule = registry.find_schedule(id or "")
        if schedule is None:
            raise exceptions.NotFound(f'No schedule "{id}" is registered.')
        sync_schedules()
        row = WorkflowSchedule.objects.filter(pk=schedule.id).first()
        return Response(ScheduleSerializer(schedule_data(schedule, row)).data)
