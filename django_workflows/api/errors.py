"""Errors as JSON: every error the API answers, mapped to one HTTP status here.

Each body has ``detail`` (for people) and ``code`` (stable, for programs);
input errors add ``fields``: the dotted name of each bad field, with its
messages. The service's errors keep their own codes (``not_running``,
``validation_failed``, ...: see ``docs/rules.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..exceptions import (
    Busy,
    IdempotencyConflict,
    InstanceNotFound,
    InvalidState,
    MigrationRequired,
    NotAllowed,
    ReferenceTaken,
    StaleRevision,
    StateTooLarge,
    UnknownSignal,
    UnknownWorkflow,
    WorkflowNotMoved,
)

# Codes the API itself adds to the service's refusal codes.
STALE_REVISION = "stale_revision"
IDEMPOTENCY_CONFLICT = "idempotency_conflict"
REQUEST_TOO_LARGE = "request_too_large"
MIGRATION_REQUIRED = "migration_required"
UNKNOWN_WORKFLOW = "unknown_workflow"
BUSY = "busy"
DATABASE_UNAVAILABLE = "database_unavailable"


def error_body(detail: str, code: str, fields: Mapping[str, list[str]] | None = None
               ) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": detail, "code": code}
    if fields:
        body["fields"] = dict(fields)
    return body


def flatten_fields(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested field errors as ``{"state.plan": ["..."]}``."""
    if isinstance(errors, Mapping):
        found: dict[str, list[str]] = {}
        for key, value in errors.items():
            found.update(flatten_fields(value, f"{prefix}.{key}" if prefix else str(key)))
        return found
    if isinstance(errors, list) and any(isinstance(e, Mapping | list) for e in errors):
        found = {}
        for index, value in enumerate(errors):
            found.update(flatten_fields(value, f"{prefix}.{index}" if prefix else str(index)))
        return found
    messages = [str(e) for e in errors] if isinstance(errors, list) else [str(errors)]
    return {prefix or "non_field_errors": messages} if messages else {}


def state_fields(error: InvalidState) -> dict[str, list[str]]:
    """A schema error's fields, named from the request body (``state.<field>``)."""
    fields: dict[str, list[str]] = {}
    for problem in error.field_errors:
        name = f"state.{problem.field}" if problem.field else "state"
        fields.setdefault(name, []).append(problem.message)
    return fields or {"state": [error.reason]}


def input_fields(error: WorkflowNotMoved) -> dict[str, list[str]]:
    """A task input's errors, named from the request body (``input.<field>``)."""
    fields: dict[str, list[str]] = {}
    for problem in error.field_errors:
        fields.setdefault(f"input.{problem.field}" if problem.field else "input",
                          []).append(problem.message)
    return fields or {"input": [error.reason]}


def payload_fields(error: WorkflowNotMoved) -> dict[str, list[str]]:
    """A signal payload's errors, named from the request body (``payload.<field>``)."""
    fields: dict[str, list[str]] = {}
    for problem in error.field_errors:
        fields.setdefault(f"payload.{problem.field}" if problem.field else "payload",
                          []).append(problem.message)
    return fields or {"payload": [error.reason]}


def workflow_error(exc: Exception) -> Response | None:
    """The answer to one of the service's errors, with its status; None for any other."""
    if isinstance(exc, InvalidState):
        return Response(error_body(exc.reason, exc.code, state_fields(exc)),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ReferenceTaken):
        return Response({**error_body(exc.reason, exc.code), "id": exc.existing},
                        status=status.HTTP_409_CONFLICT)
    if isinstance(exc, WorkflowNotMoved) and exc.code == "invalid_input":
        return Response(error_body(exc.reason, exc.code, input_fields(exc)),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, WorkflowNotMoved) and exc.code == "reference_reserved":  # schedules'
        return Response(error_body(exc.reason, exc.code, {"reference": [exc.reason]}),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, WorkflowNotMoved) and exc.code == "invalid_payload":  # InvalidPayload
        return Response(error_body(exc.reason, exc.code, payload_fields(exc)),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, UnknownSignal):
        return Response(error_body(str(exc), exc.code, {"signal": [str(exc)]}),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, StateTooLarge):
        return Response(error_body(exc.reason, exc.code),
                        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, WorkflowNotMoved):
        return Response(error_body(exc.reason, exc.code), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, StaleRevision):
        # The current revision, so the caller can read it again and retry.
        return Response(error_body(str(exc), STALE_REVISION),
                        status=status.HTTP_412_PRECONDITION_FAILED,
                        headers={"ETag": f'"{exc.actual}"'})
    if isinstance(exc, Busy):
        return Response(error_body(str(exc), BUSY), status=status.HTTP_409_CONFLICT,
                        headers={"Retry-After": "1"})
    if isinstance(exc, IdempotencyConflict):
        return Response(error_body(str(exc), IDEMPOTENCY_CONFLICT),
                        status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, NotAllowed):
        return Response(error_body(str(exc), exc.code), status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, InstanceNotFound):
        return Response(error_body(str(exc), "not_found"), status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, UnknownWorkflow):  # the instance is there; its definition is not
        return Response(error_body(str(exc), UNKNOWN_WORKFLOW), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, MigrationRequired):
        return Response(error_body(str(exc), MIGRATION_REQUIRED), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, OperationalError | InterfaceError):
        # The database went away (a restart, a failover): a passing outage, not a bug.
        # Only a lost COMMIT leaves it unknown whether a write happened, which is what
        # the Idempotency-Key of a retried request settles.
        return Response(error_body("The database is not available right now; try again in "
                                   "a moment, with the same Idempotency-Key for a write.",
                                   DATABASE_UNAVAILABLE),
                        status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "1"})
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(error_body(f"The request body is larger than the limit of {limit} bytes",
                                   REQUEST_TOO_LARGE),
                        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler, with the workflow errors and a ``code`` on every body.

    The API's views always use it; a project may also name it in
    ``REST_FRAMEWORK["EXCEPTION_HANDLER"]`` for its own views.
    """
    # Not DRF's set_rollback(): a refusal may have stored something on purpose
    # (validation errors), even inside ATOMIC_REQUESTS.
    response = workflow_error(exc)
    if response is not None:
        return response
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body("Invalid input.", "invalid", flatten_fields(exc.detail))
    elif isinstance(response.data, Mapping) and "code" not in response.data:
        codes = exc.get_codes() if isinstance(exc, exceptions.APIException) else None
        code = codes if isinstance(codes, str) else _default_code(response.status_code)
        response.data = {**response.data, "code": code}
    return response


if TYPE_CHECKING:  # a mixin of DRF's views: mypy reads it as one of them
    from rest_framework.views import APIView as _View
else:
    _View = object


class JSONErrors(_View):
    """What every view of the API does with errors (the schema's view too).

    Each is answered by :func:`exception_handler` and rendered as JSON, whatever else
    the request's ``Accept`` named, the browsable API's HTML too (errors are JSON,
    never HTML; a browser shows the JSON as it is). An
    anonymous request answers 401 with ``WWW-Authenticate`` when any of the
    authentication classes names a challenge (HTTP Basic does), 403 otherwise.
    """

    def get_exception_handler(self) -> Any:
        return exception_handler

    def get_authenticate_header(self, request: Request) -> str:
        """The first challenge of the authentication classes; "" (no class has one): 403."""
        # DRF asks only the first class, so Session before Basic would answer 403.
        # ForcedAuthentication (DRF's test client) has no authenticate_header, and needs none:
        # it signs a user in, who meets no challenge.
        for authenticator in request.authenticators or ():
            ask = getattr(authenticator, "authenticate_header", None)
            challenge = ask(request) if ask is not None else None
            if challenge:
                return str(challenge)
        return ""

    def finalize_response(self, request: Request, response: Any, *args: Any,
                          **kwargs: Any) -> Any:
        if isinstance(response, Response) and response.status_code >= 400:
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


def _default_code(status_code: int) -> str:
    return {404: "not_found", 403: "permission_denied"}.get(status_code, "error")


@csrf_exempt  # it changes nothing; a CSRF refusal would answer Django's HTML 403
def unknown_url(request: HttpRequest, path: str = "") -> JsonResponse:
    """JSON 404 for any URL under the API that names nothing (never Django's HTML page)."""
    detail = "Not found."
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not unknown_url:
            detail = f"Not found. Did you mean {request.path}/ (with a slash at the end)?"
    return JsonResponse(error_body(detail, "not_found"), status=404)
