"""Mount the API with one line: ``path("api/", include("django_workflows.api.urls"))``.

Every URL under that prefix that names nothing answers a JSON 404, so mount
other views under the same prefix *before* this include.
"""

from __future__ import annotations

from typing import Any

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from .commands import as_declared_now
from .errors import unknown_url
from .root import COLLECTIONS, APIRoot
from .schema_views import SchemaView
from .signal_sending import SignalView

app_name = "workflows-api"


def api_urlpatterns() -> list[Any]:
    """The API's URLs, with an action for each command declared now."""
    router = SimpleRouter()
    for prefix, basename, viewset in COLLECTIONS:
        router.register(prefix, as_declared_now(viewset), basename=basename)
    return [
        path("", APIRoot.as_view(), name="api-root"),
        path("schema/", SchemaView.as_view(), name="schema"),  # signed-in users (PUBLIC_SCHEMA)
        path("signals/", SignalView.as_view(), name="signals"),  # POST only: not a collection
        *router.urls,
        re_path(r"^(?P<path>[\s\S]*)$", unknown_url),  # any path, even with a newline in it
    ]


urlpatterns = api_urlpatterns()
