"""Who may read the OpenAPI schema: signed-in users, or everyone when ``PUBLIC_SCHEMA`` is on.

``/api/schema/`` is drf-spectacular's view with that rule and the API's JSON
errors; :func:`swagger_ui_view` is Swagger UI with the same rule, for a
project to mount beside the API (the example project does, at ``/api/docs/``).
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from ..conf import workflow_settings
from .errors import JSONErrors
from .schema import WorkflowsSchema, described


def schema_is_public() -> bool:
    return bool(workflow_settings.PUBLIC_SCHEMA)


class SchemaView(JSONErrors, SpectacularAPIView):
    """The OpenAPI 3 schema (YAML, or JSON with ``?format=json``); errors as the API's JSON."""

    schema = WorkflowsSchema()

    @described(**SCHEMA_KWARGS)  # as drf-spectacular describes it, on the class it needs
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # The base named (untyped_calls_exclude in pyproject.toml covers it; not super()).
        answer: Response = SpectacularAPIView.get(self, request, *args, **kwargs)
        return answer

    def get_authenticators(self) -> list[Any]:
        # Read per request, as the API's views do (override_settings, a project's own).
        classes = spectacular_settings.SERVE_AUTHENTICATION
        if classes is None:
            classes = api_settings.DEFAULT_AUTHENTICATION_CLASSES
        return [auth() for auth in classes]

    def get_permissions(self) -> list[Any]:
        # drf-spectacular's SERVE_PERMISSIONS still apply: a project may ask for more.
        permissions = [permission() for permission in spectacular_settings.SERVE_PERMISSIONS]
        if not schema_is_public():
            permissions.append(IsAuthenticated())
        return permissions


def swagger_ui_view(**initkwargs: Any) -> Any:
    """Swagger UI (drf-spectacular's view) that sends anonymous users to the login page.

    It is an HTML page for people, so it asks them to sign in (``LOGIN_URL``) rather
    than answering an error, unless ``PUBLIC_SCHEMA`` is on.
    """
    # A page, not an endpoint: out of the schema (drf-spectacular's generator would refuse its
    # schema where DEFAULT_SCHEMA_CLASS is DRF's own).
    view = SpectacularSwaggerView.as_view(**{"schema": None, **initkwargs})

    @wraps(view)
    def swagger_ui(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not schema_is_public() and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return swagger_ui
