"""The API root, ``GET /api/``: a link to each collection and to the schema.

It answers as DRF's ``DefaultRouter`` root does, with the API's access rule and errors.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_view, inline_serializer
from rest_framework import routers, serializers
from rest_framework.viewsets import ViewSetMixin

from .schedules import ScheduleViewSet
from .schema import NOT_ALLOWED, described
from .tasks import TaskViewSet
from .views import InstanceViewSet, WorkflowsAPIView, WorkflowViewSet

# The collections under the API's prefix: their URL prefix, basename and viewset.
COLLECTIONS: list[tuple[str, str, type[ViewSetMixin]]] = [
    ("workflows", "workflow", WorkflowViewSet),
    ("instances", "instance", InstanceViewSet),
    ("tasks", "task", TaskViewSet),
    ("schedules", "schedule", ScheduleViewSet),
]
# What the root links to: a name, and the URL name it reverses.
LINKS = {**{prefix: f"{basename}-list" for prefix, basename, _ in COLLECTIONS},
         "schema": "schema"}


@extend_schema_view(get=described(
    operation_id="root", summary="The API root: a link to each collection and to the schema",
    responses={200: inline_serializer("APIRoot", fields={
        name: serializers.URLField() for name in LINKS}), **NOT_ALLOWED}))
class APIRoot(WorkflowsAPIView, routers.APIRootView):
    """Links to the collections of the workflows API and to its OpenAPI schema."""

    api_root_dict = LINKS
