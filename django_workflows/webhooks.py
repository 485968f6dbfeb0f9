"""Webhooks: a view to mount per provider that turns its signed events into signals.

::

    path("hooks/payments/", webhook("payments", deliveries=payment_deliveries,
                                    secret=from_setting("PAYMENTS_WEBHOOK_SECRET")))

A request is checked before anything is read from it: POST only, its size, the
signature (``Webhook-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``,
within a tolerance of the clock), then the body, read strictly as a JSON object
(:mod:`.jsontext`, :mod:`.storable`). Each refusal is a 4xx JSON answer
``{"detail", "code"}`` and changes nothing. The project's ``deliveries(request, event)``
then names the signals to send (:class:`Delivery`), each with the provider's event id as
its message id, so a provider's retry is acknowledged and changes nothing;
:func:`services.signal <django_workflows.services.signal>` records each one, and the answer
is a 200 with what became of them. An exception in ``deliveries`` is the project's bug,
Django's 500 (``RejectEvent`` is how it refuses an event). docs/webhooks.md shows it all.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.db import InterfaceError, OperationalError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.http.response import HttpResponseBase
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from . import engine, services
from .engine.schema import check_schema
from .exceptions import (
    Busy,
    InstanceNotFound,
    InvalidPayload,
    NotAllowed,
    StateTooLarge,
    UnknownSignal,
    UnknownWorkflow,
    WorkflowError,
    WorkflowNotMoved,
)
from .inputs import json_text as jsontext
from .inputs import storable
from .models import WorkflowInstance

__all__ = ["Delivery", "RejectEvent", "WebhookView", "from_setting", "signature", "webhook"]

logger = logging.getLogger("django_workflows.webhooks")

# The longest text the signal's row keeps in a name, an address or a message id.
MAX_TEXT = 200

Secrets = str | bytes | Sequence[str | bytes]


@dataclass(frozen=True)
class Delivery:
    """One signal to send for an event: to ``workflow``'s instances by exactly one of
    ``instance``, ``reference`` and ``correlation``. ``message_id`` defaults to the event's
    id; give each delivery of one event to the same signal its own."""

    workflow: str
    signal: str
    payload: Any = None
    instance: WorkflowInstance | str | None = None
    reference: str | None = None
    correlation: str | None = None
    message_id: str | None = None


class RejectEvent(Exception):
    """An event this webhook will not take: answered ``status`` (400) with ``detail`` and
    ``code``, nothing sent. ``deliveries`` raises it for an event it cannot read."""

    def __init__(self, detail: str, code: str = "invalid_event", *, status: int = 400,
                 fields: dict[str, list[str]] | None = None) -> None:
        if not 400 <= status < 600:
            raise ValueError(f"A rejection answers 4xx or 5xx, not {status}")
        super().__init__(detail)
        self.detail, self.code, self.status, self.fields = detail, code, status, fields

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail, "code": self.code,
                **({"fields": self.fields} if self.fields else {})}


def from_setting(name: str) -> Callable[[], Secrets]:
    """The secret read from ``settings.<name>`` on each request: one secret or a list of
    them (several while rotating), kept out of the code."""

    def read() -> Secrets:
        value: Secrets | None = getattr(settings, name, None)
        if not value:
            raise ImproperlyConfigured(f"The webhook secret setting {name} is not set")
        return value

    read.__qualname__ = f"from_setting({name!r})"
    return read


def signature(body: bytes | str, secret: str | bytes, *, timestamp: int | None = None,
              scheme: str = "v1") -> str:
    """The signature header's value for ``body``: ``t=<timestamp>,v1=<hex>`` (now by
    default). For tests, and for anything that sends to such a webhook."""
    at = int(time.time()) if timestamp is None else timestamp
    return f"t={at},{scheme}={_digest(_bytes(secret), at, _bytes(body))}"


class WebhookView(View):
    """A provider's webhook: ``WebhookView.as_view(name=, secret=, deliveries=, ...)``, or
    :func:`webhook`. Subclasses may override ``get_secrets``, ``get_event_id`` and
    ``get_deliveries`` instead of passing functions, and ``verify`` for another scheme."""

    http_method_names = ["post"]
    name: str = ""  # in logs and answers: which webhook this is
    secret: Secrets | Callable[[], Secrets] | None = None
    deliveries: Callable[[HttpRequest, dict[str, Any]], Iterable[Delivery]] | None = None
    event_id: Callable[[HttpRequest, dict[str, Any]], Any] | None = None  # default: event["id"]
    event_schema: Any = None  # a JSON Schema or pydantic model every event must meet
    signature_header: str = "Webhook-Signature"
    scheme: str = "v1"
    tolerance: float = 300  # seconds a signature's timestamp may be from now, either way
    max_body_bytes: int = 1024 * 1024
    retry_after: int = 1  # seconds, in a 503's Retry-After

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Callable[..., HttpResponseBase]:
        # The signature is the authentication: no CSRF token, no session. Each delivery
        # commits on its own (services.signal), even under ATOMIC_REQUESTS.
        view = super().as_view(**initkwargs)
        probe = cls(**initkwargs)
        if not probe.name:
            raise ImproperlyConfigured(f"{cls.__name__} needs a name (for its logs)")
        if probe.secret is None and cls.get_secrets is WebhookView.get_secrets:
            raise ImproperlyConfigured(f'Webhook "{probe.name}" needs a secret')
        if probe.secret is not None and not callable(probe.secret):
            _secrets(probe.secret, probe.name)  # a literal is checked now, not on a request
        if probe.deliveries is None and cls.get_deliveries is WebhookView.get_deliveries:
            raise ImproperlyConfigured(f'Webhook "{probe.name}" needs a deliveries function')
        if probe.event_schema is not None:
            check_schema(probe.event_schema, f'Webhook "{probe.name}"', name="event_schema")
        if probe.tolerance <= 0 or probe.max_body_bytes <= 0:
            raise ImproperlyConfigured("tolerance and max_body_bytes must be positive")
        return transaction.non_atomic_requests(csrf_exempt(view))

    # -- what a subclass may change -------------------------------------------------------

    def get_secrets(self) -> list[bytes]:
        """The secrets a signature may be made with (several while rotating)."""
        value = self.secret() if callable(self.secret) else self.secret
        return _secrets(value, self.name)

    def get_event_id(self, request: HttpRequest, event: dict[str, Any]) -> Any:
        """The provider's id of this event (a retry has the same): ``event["id"]``."""
        return self.event_id(request, event) if self.event_id else event.get("id")

    def get_deliveries(self, request: HttpRequest, event: dict[str, Any]) -> Iterable[Delivery]:
        assert self.deliveries is not None  # as_view() made sure
        return self.deliveries(request, event)

    # -- the request ----------------------------------------------------------------------

    def http_method_not_allowed(self, request: HttpRequest, *args: Any,
                                **kwargs: Any) -> HttpResponse:
        return _answer({"detail": f"Method {request.method} not allowed: a webhook takes POST.",
                        "code": "method_not_allowed"}, 405, {"Allow": "POST"})

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            body = self.read_body(request)
            self.verify(request, body)
            event = self.read_event(body)
            event_id = self.read_event_id(request, event)
            planned = self.plan(request, event, event_id)
        except RejectEvent as rejection:
            logger.warning('Webhook "%s" refused a request: %s (%s)', self.name,
                           rejection.detail, rejection.code)
            return _answer(rejection.body(), rejection.status)
        return self.send(planned, event_id)

    def read_body(self, request: HttpRequest) -> bytes:
        limit = self.max_body_bytes
        length = request.META.get("CONTENT_LENGTH") or "0"
        too_large = RejectEvent(f"The body is larger than the {limit} bytes this webhook "
                                "takes", "request_too_large", status=413)
        if length.isdigit() and int(length) > limit:
            raise too_large  # not read at all
        try:
            body = request.body
        except RequestDataTooBig:
            raise RejectEvent("The body is larger than the "
                              f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes this site takes "
                              "(DATA_UPLOAD_MAX_MEMORY_SIZE)", "request_too_large",
                              status=413) from None
        except RawPostDataException:  # something read it as a form first
            raise RejectEvent("The body could not be read", "invalid_body") from None
        if len(body) > limit:
            raise too_large
        return body

    def verify(self, request: HttpRequest, body: bytes) -> None:
        """The body was signed with one of our secrets, recently; or RejectEvent."""
        header = request.headers.get(self.signature_header)
        if not header:
            raise RejectEvent(f"The {self.signature_header} header is missing",
                              "signature_missing")
        timestamp, signatures = _parse(header, self.scheme)
        if timestamp is None or not signatures:
            raise RejectEvent(f"The {self.signature_header} header is not "
                              f"t=<unix time>,{self.scheme}=<hex HMAC-SHA256>",
                              "signature_malformed")
        skew = time.time() - timestamp
        if abs(skew) > self.tolerance:
            when = "old" if skew > 0 else "in the future"
            raise RejectEvent(f"The signature's timestamp is {abs(skew):.0f}s {when}; the "
                              f"tolerance is {self.tolerance:g}s", "signature_expired",
                              status=403)
        expected = [_digest(secret, timestamp, body) for secret in self.get_secrets()]
        # Every pair is compared, in constant time each: no early exit tells which matched.
        matched = [hmac.compare_digest(mine, theirs) for mine in expected for theirs in signatures]
        if not any(matched):
            raise RejectEvent("The signature does not match the body", "signature_mismatch",
                              status=403)

    def read_event(self, body: bytes) -> dict[str, Any]:
        try:
            event = jsontext.loads(body.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise RejectEvent(f"The body is not UTF-8: {error.reason}", "invalid_json") from None
        except jsontext.InvalidJSON as error:
            raise RejectEvent(f"The body is not JSON: {error}", "invalid_json") from None
        problems = storable.problem_lines(storable.json_problems(event))
        if problems:
            raise RejectEvent(f"The body cannot be stored: {'; '.join(problems[:5])}",
                              "invalid_json")
        if not isinstance(event, dict):
            raise RejectEvent("The body is not a JSON object", "invalid_event")
        wrong = engine.validate_state(self.event_schema, event)
        if wrong:
            raise RejectEvent("The event is not one this webhook takes: "
                              f"{'; '.join(map(str, wrong[:5]))}", "invalid_event",
                              fields=_fields("event", wrong))
        return event

    def read_event_id(self, request: HttpRequest, event: dict[str, Any]) -> str:
        found = self.get_event_id(request, event)
        if isinstance(found, int) and not isinstance(found, bool):
            found = str(found)
        if not isinstance(found, str) or not found:
            raise RejectEvent("The event has no id (a provider's retry is known by it)",
                              "missing_event_id")
        _check_text("The event's id", found)
        return found

    def plan(self, request: HttpRequest, event: dict[str, Any],
             event_id: str) -> list[Delivery]:
        """The project's deliveries, read whole and checked before any is sent: what they
        name comes from the event, so a bad one is the request's 400."""
        planned = list(self.get_deliveries(request, event))
        seen: set[tuple[str, str, str]] = set()
        for delivery in planned:
            if not isinstance(delivery, Delivery):
                raise TypeError(f'Webhook "{self.name}": deliveries() gave {delivery!r}, '
                                "not a Delivery")
            _check_delivery(delivery)
            key = (delivery.workflow, delivery.signal, delivery.message_id or event_id)
            if key in seen:
                raise RejectEvent(f'Two deliveries of "{delivery.signal}" to workflow '
                                  f'"{delivery.workflow}" have the message id "{key[2]}": '
                                  "the second would be taken for a repeat", "invalid_delivery")
            seen.add(key)
        return planned

    def send(self, planned: list[Delivery], event_id: str) -> JsonResponse:
        """Each delivery recorded on its own; the answer names what became of each. The
        status is 503 if any may succeed on a retry, else the first refusal's, else 200."""
        results, refusals = [], []
        for delivery in planned:
            result, refusal = self.send_one(delivery, event_id)
            results.append(result)
            if refusal is not None:
                refusals.append(refusal)
        body: dict[str, Any] = {"webhook": self.name, "event": event_id, "deliveries": results}
        if not refusals:
            return _answer(body, 200)
        decisive = next((r for r in refusals if r.status == 503), refusals[0])
        headers = {"Retry-After": str(self.retry_after)} if decisive.status == 503 else {}
        return _answer({**decisive.body(), **body}, decisive.status, headers)

    def send_one(self, delivery: Delivery, event_id: str
                 ) -> tuple[dict[str, Any], RejectEvent | None]:
        message_id = delivery.message_id or event_id
        result: dict[str, Any] = {"workflow": delivery.workflow, "signal": delivery.signal,
                                  "message_id": message_id}
        try:
            sent = services.signal(delivery.workflow, delivery.signal, delivery.payload,
                                   instance=delivery.instance, reference=delivery.reference,
                                   correlation=delivery.correlation, message_id=message_id)
        except WorkflowError as error:
            refusal = _refusal(error)
            if refusal is None:  # a finished instance: no retry will change that
                result.update(outcome="not_waiting", detail=str(error))
            else:
                result.update(outcome="refused", **refusal.body())
        except (OperationalError, InterfaceError):
            logger.exception('Webhook "%s": the database failed on event %s', self.name,
                             event_id)
            refusal = RejectEvent("The database is not available right now; send the event "
                                  "again", "database_unavailable", status=503)
            result.update(outcome="refused", **refusal.body())
        else:
            refusal = None
            outcome = "repeated" if sent.repeated else "kept" if sent.kept else "taken"
            result.update(outcome=outcome, signal_id=sent.signal.pk,
                          instances=[str(i.pk) for i in sent.taken_by])
        logger.log(logging.WARNING if refusal else logging.INFO,
                   'Webhook "%s": event %s, signal "%s" to workflow "%s": %s', self.name,
                   event_id, delivery.signal, delivery.workflow, result["outcome"])
        return result, refusal


def webhook(name: str, *, secret: Secrets | Callable[[], Secrets],
            deliveries: Callable[[HttpRequest, dict[str, Any]], Iterable[Delivery]],
            **options: Any) -> Callable[..., HttpResponseBase]:
    """The view of a provider's webhook, for ``path()``: ``WebhookView.as_view(...)`` with
    its name, secret and deliveries function; ``options`` are its other attributes."""
    return WebhookView.as_view(name=name, secret=secret, deliveries=deliveries, **options)


# -- helpers of the view, in the order it uses them --------------------------------------


def _answer(body: dict[str, Any], status: int, headers: dict[str, str] | None = None
            ) -> JsonResponse:
    response = JsonResponse(body, status=status)
    for header, value in (headers or {}).items():
        response[header] = value
    return response


def _bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def _secrets(value: Any, name: str) -> list[bytes]:
    listed = [value] if isinstance(value, str | bytes) else list(value or ())
    if not listed or not all(isinstance(s, str | bytes) and s for s in listed):
        raise ImproperlyConfigured(f'Webhook "{name}" has no secret, or an empty one')
    return [_bytes(s) for s in listed]


def _digest(secret: bytes, timestamp: int, body: bytes) -> str:
    return hmac.new(secret, b"%d." % timestamp + body, hashlib.sha256).hexdigest()


def _parse(header: str, scheme: str) -> tuple[int | None, list[str]]:
    """``t=<unix time>,v1=<hex>[,v1=<hex>...]``: the timestamp and the signatures."""
    timestamp, signatures = None, []
    for part in header.split(",")[:32]:
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isascii() and value.isdigit() and len(value) <= 12:
            timestamp = int(value)
        elif key == scheme and value and value.isascii():  # compare_digest takes ASCII text
            signatures.append(value)
    return timestamp, signatures


def _check_text(what: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise RejectEvent(f"{what} is not a text", "invalid_delivery")
    if len(value) > MAX_TEXT:
        raise RejectEvent(f"{what} is longer than {MAX_TEXT} characters", "invalid_delivery")
    if storable.json_problems(value):
        raise RejectEvent(f"{what} has characters a database cannot store",
                          "invalid_delivery")


def _check_delivery(delivery: Delivery) -> None:
    what = f'The delivery of "{delivery.signal}"'
    _check_text(f"{what}'s workflow", delivery.workflow)
    _check_text(f"{what}'s signal", delivery.signal)
    addresses = {"instance": delivery.instance, "reference": delivery.reference,
                 "correlation": delivery.correlation}
    given = {key: value for key, value in addresses.items() if value is not None}
    if len(given) != 1:
        raise RejectEvent(f"{what} needs exactly one of instance, reference and correlation; "
                          f"the event gave {', '.join(given) or 'none'}", "invalid_delivery")
    for key, value in given.items():
        if not isinstance(value, WorkflowInstance):
            _check_text(f"{what}'s {key}", value)
    if delivery.message_id is not None:
        _check_text(f"{what}'s message id", delivery.message_id)
    problems = storable.problem_lines(storable.json_problems(delivery.payload))
    if problems:
        raise RejectEvent(f"{what}'s payload cannot be stored: {'; '.join(problems[:5])}",
                          "invalid_delivery")


def _refusal(error: WorkflowError) -> RejectEvent | None:
    """The answer to one of the service's errors; None for ``not_waiting`` (acknowledged:
    the instance is finished, and a provider would otherwise send it again for days)."""
    detail = str(error)
    if isinstance(error, Busy):
        return RejectEvent(detail, "busy", status=503)
    if isinstance(error, UnknownSignal | UnknownWorkflow):
        return RejectEvent(detail, getattr(error, "code", "unknown_workflow"))
    if isinstance(error, StateTooLarge):
        return RejectEvent(error.reason, error.code, status=413)
    if isinstance(error, InvalidPayload):
        return RejectEvent(error.reason, error.code,
                           fields=_fields("payload", error.field_errors))
    if isinstance(error, NotAllowed):
        return RejectEvent(detail, error.code, status=403)
    if isinstance(error, InstanceNotFound):
        return RejectEvent(detail, "not_found", status=404)
    if isinstance(error, WorkflowNotMoved):
        return None if error.code == "not_waiting" else RejectEvent(error.reason, error.code,
                                                                     status=409)
    return RejectEvent(detail, "conflict", status=409)


def _fields(prefix: str, problems: Iterable[engine.FieldError]) -> dict[str, list[str]]:
    """Field errors named from the top: ``payload.amount``, ``event.data``."""
    fields: dict[str, list[str]] = {}
    for problem in problems:
        fields.setdefault(f"{prefix}.{problem.field}" if problem.field else prefix,
                          []).append(problem.message)
    return fields
