"""What the OpenAPI schema says of the endpoints beyond what drf-spectacular finds itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from .parsing import IDEMPOTENCY_KEY_PATTERN, IF_MATCH_PATTERN
from .serializers import ErrorSerializer, InstanceSerializer

IF_MATCH = OpenApiParameter(
    "If-Match", str, OpenApiParameter.HEADER, pattern=IF_MATCH_PATTERN,
    description='The revision you last saw (its ETag, e.g. "3"); when the instance moved '
                "on since, the answer is 412 and nothing changes.")
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, pattern=IDEMPOTENCY_KEY_PATTERN,
    description="Send the request again with the same key and body: the first response "
                "comes back, nothing is done twice. The same key with another body: 422.")
ETAG = OpenApiParameter("ETag", str, OpenApiParameter.HEADER, response=[200, 201],
                        description='The instance\'s revision, quoted ("3").')
WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate", str, OpenApiParameter.HEADER, response=[401], required=True,
    description='The challenge of an authentication class, e.g. `Basic realm="api"`.')


class WorkflowsSchema(AutoSchema):
    """drf-spectacular's AutoSchema for the API's views, whatever ``DEFAULT_SCHEMA_CLASS`` is.

    Every operation's 401 declares its ``WWW-Authenticate``.
    """

    def get_override_parameters(self) -> list[Any]:
        return [*super().get_override_parameters(), WWW_AUTHENTICATE]


def described(**options: Any) -> Callable[[Any], Any]:
    """drf-spectacular's ``extend_schema`` for a view method, built on :class:`WorkflowsSchema`.

    On a method, ``extend_schema`` builds on the ``DEFAULT_SCHEMA_CLASS`` of when the
    module is imported: DRF's own AutoSchema in a project that names none, with which
    drf-spectacular's generator fails (``get_operation() takes 3 positional arguments``).
    """
    extend = extend_schema(**options)

    def describe(method: Any) -> Any:
        if not hasattr(method, "kwargs"):
            method.kwargs = {}
        method.kwargs.setdefault("schema", WorkflowsSchema)  # where extend_schema looks first
        return extend(method)

    return describe


def error_response(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


NOT_ALLOWED = {
    401: error_response("Not authenticated, or wrong credentials; `WWW-Authenticate` names the "
                        "challenge (where an authentication class has one: HTTP Basic)."),
    403: error_response("Authenticated, but not allowed to do this; or not authenticated where "
                        "no authentication class has a challenge (session only)."),
}
UNKNOWN_INSTANCE = error_response("No such instance, or one you may not see.")
ACTION_RESPONSES = {
    200: OpenApiResponse(InstanceSerializer, description="It moved: the instance."),
    400: error_response("A malformed body, If-Match or Idempotency-Key."),
    **NOT_ALLOWED,
    404: UNKNOWN_INSTANCE,
    409: error_response("Refused by a rule (`code` says which: not_running, validation_failed, "
                "work_in_progress, ...) or the instance stayed busy (`busy`); nothing "
                "moved. Validation errors are stored in the instance's `errors`."),
    412: error_response("If-Match named a stale revision; nothing changed. ETag: the current one."),
    413: error_response("The request body is too large."),
    422: error_response("The Idempotency-Key was already used for a different request."),
}
