"""Hostile bodies with valid signatures, to every webhook: never a server error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_workflows.models import WorkflowInstance, WorkflowSignal
from tests.strategies import json_text, json_values, long_digits, nasty_text

from .conftest import waiting_order

pytestmark = pytest.mark.urls("tests.webhooks.urls")

# Each webhook with the secret and header it checks (not the broken one: its 500 is meant).
WEBHOOKS = [("/hooks/payments/", "whsec_test", "Webhook-Signature"),
            ("/hooks/orders/", "orders-secret", "X-Shop-Signature"),
            ("/hooks/split/", "split-secret", "Webhook-Signature")]

anything = json_values() | long_digits() | nasty_text("pi_1", "O-1", "evt_1")


def mostly(good: object, otherwise: st.SearchStrategy = anything) -> st.SearchStrategy:
    """``good`` (a value or a strategy) about three times in four, else ``otherwise``:
    one_of would draw from a recursive strategy far more often."""
    strategy = good if isinstance(good, st.SearchStrategy) else st.just(good)
    return st.tuples(st.booleans(), st.booleans()).flatmap(
        lambda bits: otherwise if all(bits) else strategy)


def events() -> st.SearchStrategy[str]:
    """Events shaped as the deliveries functions read them, each field sometimes hostile:
    many are delivered, the others refused."""
    intent = st.fixed_dictionaries({"id": mostly("pi_1"), "amount": mostly(12)},
                                   optional={"latest_charge": anything})
    order = st.fixed_dictionaries({"reference": mostly("O-1")}, optional={"paid": anything})
    event = st.fixed_dictionaries({
        "id": mostly("evt_1"), "type": mostly("payment_intent.succeeded"),
        "data": mostly(st.fixed_dictionaries({"object": intent})),
        "order": mostly(order),
        "intents": mostly(st.lists(mostly("pi_1"), max_size=3)),
    })
    return event.map(json.dumps)  # lone surrogates as \ud800 escapes


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


bodies = mostly(events().map(utf8), json_text(object_keys=("id", "type")).map(utf8)
                | st.binary(max_size=200))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=bodies, webhook=st.sampled_from(WEBHOOKS))
def test_no_signed_body_makes_a_server_error(provider, body, webhook):
    path, secret, header = webhook
    # An instance waits for each example's signal, and no message id was seen before.
    WorkflowSignal.objects.all().delete()
    if not WorkflowInstance.objects.filter(awaiting="payment-confirmed").exists():
        WorkflowInstance.objects.filter(reference="O-1").delete()
        waiting_order("pi_1", reference="O-1")

    answer = provider.send(path, body, secret=secret, header=header)

    assert answer.status < 500, (body[:200], answer.body)
    assert answer.headers["Content-Type"] == "application/json"
