"""Mount the API with one line: ``path("api/", include("django_workflows.api.urls"))``.

Every URL under that prefix that names nothing answers a JSON 404, so mount
other views under the same prefix *before* this include.
"""

from __future__ import annotations

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from .errors import unknown_url
from .schema_views import SchemaView
from .tasks import TaskViewSet
from .views import InstanceViewSet, WorkflowViewSet

app_name = "workflows-api"

router = SimpleRouter()
router.register("workflows", WorkflowViewSet, basename="workflow")
router.register("instances", InstanceViewSet, basename="instance")
router.register("tasks", TaskViewSet, basename="task")

urlpatterns = [
    path("schema/", SchemaView.as_view(), name="schema"),  # signed-in users (PUBLIC_SCHEMA)
    *router.urls,
    re_path(r"^(?P<path>[\s\S]*)$", unknown_url),  # any path, even with a newline in it
]
