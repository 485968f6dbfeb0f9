"""docs/waiting.md's code, run as written: its definition registered, its sending and its
test followed as a reader would copy them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from django_workflows import registry, services

PAGE = Path(__file__).resolve().parents[1] / "docs" / "waiting.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.django_db


@pytest.fixture
def page_code():
    definition, sending, test = BLOCK.findall(PAGE.read_text())
    names: dict = {}
    exec(definition, names)  # the page's own code, as a reader runs it
    registry.register(names["orders"], origin="docs/waiting.md")
    yield sending, test
    registry.unregister("order")


def test_the_pages_test_of_a_timer_passes(page_code):
    _, test = page_code
    names: dict = {}
    exec(test, names)

    names["test_a_paid_order_is_reminded_three_days_after_shipping"](None)


def test_the_pages_signal_reaches_the_order_waiting_with_its_correlation(page_code):
    sending, _ = page_code
    order = services.next(services.create("order", state={"intent": "pi_3Nf...",
                                                           "payment": None}, start=True))

    class Request:  # what the page's snippet reads: the signed-in user
        user = None

    names: dict = {"request": Request()}
    exec(sending.split("\nsent.taken_by")[0], names)

    assert [i.pk for i in names["sent"].taken_by] == [order.pk]
    assert names["sent"].taken_by[0].current_step == "ship"
