"""A webhook mounted without what it needs fails when the URLconf is read, not on the
first event; and the signature scheme is the one the docs tell a sender to make."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from django_workflows.engine import DefinitionError
from django_workflows.webhooks import RejectEvent, WebhookView, from_setting, signature, webhook

from .hooks import payment_deliveries


@pytest.mark.parametrize("secret", [None, "", [], ["whsec", ""], [b""]])
def test_a_webhook_without_a_secret_is_refused_when_mounted(secret):
    with pytest.raises(ImproperlyConfigured, match="secret"):
        webhook("payments", secret=secret, deliveries=payment_deliveries)


def test_a_webhook_without_a_deliveries_function_is_refused_when_mounted():
    with pytest.raises(ImproperlyConfigured, match="deliveries"):
        WebhookView.as_view(name="payments", secret="whsec")


def test_a_webhook_without_a_name_is_refused_when_mounted():
    with pytest.raises(ImproperlyConfigured, match="name"):
        WebhookView.as_view(secret="whsec", deliveries=payment_deliveries)


def test_an_event_schema_that_is_no_schema_is_refused_when_mounted():
    with pytest.raises(DefinitionError, match="event_schema"):
        webhook("payments", secret="whsec", deliveries=payment_deliveries,
                event_schema={"type": 12})


def test_an_option_the_view_does_not_have_is_refused_when_mounted():
    with pytest.raises(TypeError, match="tolerence"):
        webhook("payments", secret="whsec", deliveries=payment_deliveries, tolerence=60)


def test_a_secret_setting_that_is_not_set_fails_on_the_request_as_the_projects_error(settings):
    view = webhook("payments", secret=from_setting("NO_SUCH_WEBHOOK_SECRET"),
                   deliveries=payment_deliveries)
    body = b'{"id": "evt_1"}'
    request = RequestFactory().post("/hooks/", body, content_type="application/json",
                                    headers={"Webhook-Signature": signature(body, "x")})

    with pytest.raises(ImproperlyConfigured, match="NO_SUCH_WEBHOOK_SECRET"):
        view(request)


def test_the_signature_is_the_hex_hmac_sha256_of_the_timestamp_a_dot_and_the_raw_body():
    body = b'{"id": "evt_1"}'
    digest = hmac.new(b"whsec", b"1700000000." + body, hashlib.sha256).hexdigest()

    assert signature(body, "whsec", timestamp=1700000000) == f"t=1700000000,v1={digest}"


def test_the_view_is_csrf_exempt_and_commits_each_delivery_on_its_own():
    view = webhook("payments", secret="whsec", deliveries=payment_deliveries)

    assert view.csrf_exempt
    assert view._non_atomic_requests == {"default"}


def test_a_rejection_answers_an_error_status_only():
    with pytest.raises(ValueError, match="4xx or 5xx"):
        RejectEvent("fine", status=200)
