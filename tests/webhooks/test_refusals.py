"""Requests the webhook refuses before it sends anything: each a 4xx JSON answer
``{"detail", "code"}`` that leaves the instance and the signals as they were."""

from __future__ import annotations

import json
import time

import pytest

from django_workflows.webhooks import signature

from .conftest import SECRET, footprint, succeeded, waiting_order

pytestmark = pytest.mark.urls("tests.webhooks.urls")

EVENT = json.dumps(succeeded("pi_1"))


@pytest.fixture
def instance(provider):
    return waiting_order("pi_1")


def refused(provider, instance, status: int, code: str, body=EVENT, **options) -> dict:
    """Send ``body``; it must be answered ``status`` and ``code`` and change nothing."""
    before = footprint(instance)
    answer = provider.send("/hooks/payments/", body, **options)
    assert (answer.status, answer.body["code"]) == (status, code), answer.body
    assert isinstance(answer.body["detail"], str) and answer.body["detail"]
    assert footprint(instance) == before
    return answer.body


def test_a_forged_signature_answers_403(provider, instance):
    refused(provider, instance, 403, "signature_mismatch", secret="not-the-secret")


def test_a_signature_of_another_body_answers_403(provider, instance):
    other = signature(json.dumps(succeeded("pi_1", amount=1)), SECRET)
    refused(provider, instance, 403, "signature_mismatch", signed=other)


def test_a_timestamp_older_than_the_tolerance_answers_403(provider, instance):
    body = refused(provider, instance, 403, "signature_expired",
                   timestamp=int(time.time()) - 301)
    assert "old" in body["detail"]


def test_a_timestamp_in_the_future_answers_403(provider, instance):
    body = refused(provider, instance, 403, "signature_expired",
                   timestamp=int(time.time()) + 600)
    assert "future" in body["detail"]


def test_a_missing_signature_header_answers_400(provider, instance):
    refused(provider, instance, 400, "signature_missing", signed="")


def test_a_signature_in_another_header_than_the_webhooks_answers_400(provider, instance):
    refused(provider, instance, 400, "signature_missing", header="X-Other-Signature")


@pytest.mark.parametrize("header", ["v1=abc", "t=now,v1=abc", f"t={int(time.time())}",
                                    f"t={int(time.time())},v2=abc", "garbage", "t=,v1=",
                                    f"t={int(time.time())},v1=é"])
def test_a_malformed_signature_header_answers_400(provider, instance, header):
    refused(provider, instance, 400, "signature_malformed", signed=header)


@pytest.mark.parametrize("body", ["not json", "{", "", "\ufeff{}", b"\xff\xfe{}",
                                  '{"id": NaN}', '{"id": Infinity}', '{"id": 1e999}',
                                  '{"id": ' + "9" * 5000 + "}"])
def test_a_body_that_is_not_strict_json_answers_400(provider, instance, body):
    refused(provider, instance, 400, "invalid_json", body=body)


@pytest.mark.parametrize("depth", [150, 10_000, 30_000])
def test_a_deeply_nested_body_answers_400(provider, instance, depth):
    refused(provider, instance, 400, "invalid_json", body='{"id": "e", "x": ' + "[" * depth
            + "]" * depth + "}")


@pytest.mark.parametrize("text", ['"\\ud800"', '"a\\u0000b"'])
def test_text_a_database_cannot_store_answers_400(provider, instance, text):
    refused(provider, instance, 400, "invalid_json", body='{"id": "e", "note": ' + text + "}")


def test_a_lone_surrogate_in_a_key_answers_400(provider, instance):
    refused(provider, instance, 400, "invalid_json", body='{"id": "e", "\\udc00": 1}')


@pytest.mark.parametrize("body", ["[]", '"evt"', "12", "null"])
def test_a_body_that_is_not_an_object_answers_400(provider, instance, body):
    refused(provider, instance, 400, "invalid_event", body=body)


def test_an_event_without_an_id_answers_400(provider, instance):
    event = succeeded("pi_1")
    del event["id"]
    refused(provider, instance, 400, "invalid_event", body=event)  # the event schema's


def test_an_event_against_the_event_schema_answers_400_with_its_fields(provider, instance):
    event = succeeded("pi_1")
    event["data"]["object"]["amount"] = "twelve"
    body = refused(provider, instance, 400, "invalid_event", body=event)
    assert list(body["fields"]) == ["event.data.object.amount"]


def test_an_event_without_an_id_where_no_schema_asks_for_it_answers_400(provider, instance):
    refused_orders = provider.send("/hooks/orders/", {"order": {"reference": "O-1"}},
                                   secret="orders-secret", header="X-Shop-Signature")
    assert (refused_orders.status, refused_orders.body["code"]) == (400, "missing_event_id")


def test_a_body_over_the_webhooks_limit_answers_413(provider, instance):
    event = {**succeeded("pi_1"), "padding": "x" * (64 * 1024)}
    refused(provider, instance, 413, "request_too_large", body=event)


def test_a_body_over_djangos_upload_limit_answers_413(provider, instance, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    event = {**succeeded("pi_1"), "padding": "x" * 2000}
    body = refused(provider, instance, 413, "request_too_large", body=event)
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in body["detail"]


def test_a_delivery_with_no_address_from_the_event_answers_400(provider, instance):
    answer = provider.send("/hooks/split/", {"id": "evt_1", "intents": [None]},
                           secret="split-secret")
    assert (answer.status, answer.body["code"]) == (400, "invalid_delivery")


@pytest.mark.parametrize("intent", ["x" * 201, {"a": 1}, 12, ""])
def test_a_delivery_with_an_address_no_row_can_hold_answers_400(provider, instance, intent):
    answer = provider.send("/hooks/split/", {"id": "evt_1", "intents": [intent]},
                           secret="split-secret")
    assert (answer.status, answer.body["code"]) == (400, "invalid_delivery")


def test_an_event_id_no_row_can_hold_answers_400(provider, instance):
    refused(provider, instance, 400, "invalid_delivery", body=succeeded("pi_1", event="e" * 201))
