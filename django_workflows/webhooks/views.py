"""The webhook's view: a request checked before anything is read from it (POST only, its
size, the signature, then the body, read strictly as a JSON object), then each delivery
recorded on its own by :func:`services.signal <django_workflows.services.signal>`."""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.db import InterfaceError, OperationalError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.http.response import HttpResponseBase
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from .. import engine, services
from ..engine.schema import check_schema
from ..exceptions import WorkflowError
from ..inputs import json_text as jsontext
from ..inputs import storable
from .deliveries import Delivery, RejectEvent, check_delivery, check_text, field_errors, refusal_of
from .signing import Secrets, digest, parse_header, secrets_of

# The name it always had: a project's LOGGING may name it.
logger = logging.getLogger("django_workflows.webhooks")


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
            secrets_of(probe.secret, probe.name)  # a literal is checked now, not on a request
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
        return secrets_of(value, self.name)

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
        timestamp, signatures = parse_header(header, self.scheme)
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
        expected = [digest(secret, timestamp, body) for secret in self.get_secrets()]
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
                              fields=field_errors("event", wrong))
        return event

    def read_event_id(self, request: HttpRequest, event: dict[str, Any]) -> str:
        found = self.get_event_id(request, event)
        if isinstance(found, int) and not isinstance(found, bool):
            found = str(found)
        if not isinstance(found, str) or not found:
            raise RejectEvent("The event has no id (a provider's retry is known by it)",
                              "missing_event_id")
        check_text("The event's id", found)
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
            check_delivery(delivery)
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
            refusal = refusal_of(error)
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



def _answer(body: dict[str, Any], status: int, headers: dict[str, str] | None = None
            ) -> JsonResponse:
    response = JsonResponse(body, status=status)
    for header, value in (headers or {}).items():
        response[header] = value
    return response
