"""Factories for the example shop's rows and order states."""

from __future__ import annotations

import copy
from typing import Any

import factory

from example_project.shop.models import StockItem


class StockItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = StockItem
        django_get_or_create = ("sku",)

    sku = factory.Sequence(lambda n: f"SKU-{n}")
    name = factory.LazyAttribute(lambda item: f"Article {item.sku}")
    price_cents = 1990
    on_hand = 10
    reserved = 0


ORDER = {
    "order_number": "A-1001",
    "customer": {"name": "Ann Lee", "email": "ann@example.com"},
    "items": [{"sku": "MUG", "quantity": 2},
              {"sku": "TEE", "quantity": 1}],
    "payment_method": "pm_card_ok",
    "currency": "EUR",
    "address": {"name": "Ann Lee", "street": "Hauptstr. 1", "city": "Berlin",
                "postcode": "10115", "country": "DE"},
}
ORDER_TOTAL_CENTS = 2 * 1290 + 1990


def order_state(**changes: Any) -> dict[str, Any]:
    """An order for two mugs and a tee to Berlin, with ``changes`` on top."""
    state = copy.deepcopy(ORDER)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(state.get(key), dict):
            state[key] = {**state[key], **value}
        else:
            state[key] = value
    return state


def stock_for_order(on_hand: int = 10) -> list[StockItem]:
    return [StockItemFactory(sku="MUG", price_cents=1290, on_hand=on_hand),
            StockItemFactory(sku="TEE", price_cents=1990, on_hand=on_hand)]
