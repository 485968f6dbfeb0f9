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
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from ..conf import workflow_settings
from .errors import exception_handler


def schema_is_public() -> bool:
    return bool(workflow_settings.PUBLIC_SCHEMA)


class SchemaView(SpectacularAPIView):
    """The OpenAPI 3 schema (YAML, or JSON with ``?format=json``); errors as the API's JSON."""

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

    def get_exception_handler(self) -> Any:
        return exception_handler

    def finalize_response(self, request: Request, response: Any, *args: Any,
                          **kwargs: Any) -> Any:
        if isinstance(response, Response) and response.status_code >= 400:
            # An error is JSON, whatever format the schema itself was asked in.
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


def swagger_ui_view(**initkwargs: Any) -> Any:
    """Swagger UI (drf-spectacular's view) that sends anonymous users to the login page.

    It is an HTML page for people, so it asks them to sign in (``LOGIN_URL``) rather
    than answering an error, unless ``PUBLIC_SCHEMA`` is on.
    """
    view = SpectacularSwaggerView.as_view(**initkwargs)

    @wraps(view)
    def swagger_ui(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not schema_is_public() and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return swagger_ui
