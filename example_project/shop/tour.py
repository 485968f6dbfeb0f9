"""The tour's live cases (README, "A short tour"): work a visitor watches happen.

* a **slow order**: its bank takes ``SLOW_LATENCY`` seconds (five minutes in the demo) to
  confirm the payment. The order waits for the provider's signed webhook meanwhile (its
  admin page says so), and moves on by itself when it comes; the bank's side (a
  ``fake-bank`` instance) shows its progress;
* a **failing order**: paid, then no courier delivers to Iceland, so it fails and can be
  rolled back (the refund, the stock released);
* a **declined order**: the bank declines the card, the order waits for another one, and
  a reminder's timer fires ``SHOP_TIMES["PAYMENT_REMINDER"]`` later (a minute in the
  demo): the customer is emailed;
* a **claim to approve**: bob's expense claim, in the managers' task inbox.

``manage.py workflows_demo_data`` starts the slow order once; the home page's button
(:func:`example_project.shop.views.start_live_cases`, staff only) starts them all again,
so the tour can be taken twice. Their work runs on the workers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from django_workflows import services
from django_workflows.exceptions import ReferenceTaken
from django_workflows.models import WorkflowInstance

FIRST_ORDER_NUMBER = 1001
ORDER_NUMBER = re.compile(r"^D-(\d+)$")


class DemoUsersMissing(Exception):
    """The live cases belong to the demo's customers: ``workflows_demo_data`` makes them."""


def order(number: str, customer: Any, *, country: str = "DE",
          payment_method: str = "pm_card_ok") -> dict[str, Any]:
    """An order's state: two mugs and a poster for ``customer``."""
    name = customer.get_username().title()
    return {
        "order_number": number,
        "customer": {"name": name, "email": f"{customer.get_username()}@example.com"},
        "items": [{"sku": "MUG", "quantity": 2},
                  {"sku": "POSTER", "quantity": 1}],
        "payment_method": payment_method, "currency": "EUR",
        "address": {"name": name, "street": "Main Street 1", "city": "Springfield",
                    "postcode": "12345", "country": country},
    }


def expense(employee: Any, amount: float, description: str, **changes: Any) -> dict[str, Any]:
    """An expense claim's state, with a receipt."""
    return {"employee": employee.get_username(), "amount": amount, "currency": "EUR",
            "category": "travel", "description": description,
            "receipt": "receipts/demo.pdf", **changes}


def next_order_number() -> str:
    """The number after the highest order number the shop has given (``D-1001`` first)."""
    given = WorkflowInstance.objects.filter(workflow="order-fulfilment").filter(
        Q(reference__startswith="D-") | Q(state__order_number__startswith="D-"))
    numbers = [int(match.group(1)) for reference, number in
               given.values_list("reference", "state__order_number")
               for text in (reference, number)
               if isinstance(text, str) and (match := ORDER_NUMBER.match(text))]
    return f"D-{max(numbers, default=FIRST_ORDER_NUMBER - 1) + 1}"


def place_order(customer: Any, operator: Any, **details: Any) -> WorkflowInstance:
    """A new order for ``customer``, placed by ``operator`` and started: its work is queued.

    The order number is its reference; one taken meanwhile (two visitors at once) is
    skipped."""
    tries = 0
    while True:
        number = next_order_number()
        try:
            return services.create("order-fulfilment", state=order(number, customer, **details),
                                   owner=customer, user=operator, start=True, reference=number)
        except ReferenceTaken:
            tries += 1
            if tries == 5:
                raise


def slow_order(customer: Any, operator: Any) -> WorkflowInstance:
    return place_order(customer, operator, payment_method="pm_card_slow")


def failing_order(customer: Any, operator: Any) -> WorkflowInstance:
    return place_order(customer, operator, country="IS")  # no courier delivers there


def declined_order(customer: Any, operator: Any) -> WorkflowInstance:
    return place_order(customer, operator, payment_method="pm_card_declined")


def claim_to_approve(employee: Any) -> WorkflowInstance:
    """An expense claim ``employee`` submits: it waits for a manager's decision."""
    claim = services.create("expense-approval", user=employee, start=True,
                            state=expense(employee, 310, "Hotel in Hamburg, two nights"))
    return services.next(claim, user=employee)


@dataclass(frozen=True)
class LiveCases:
    slow_order: WorkflowInstance
    failing_order: WorkflowInstance
    declined_order: WorkflowInstance
    claim: WorkflowInstance


def demo_customers() -> tuple[Any, Any]:
    User = get_user_model()
    found = {user.get_username(): user for user in
             User.objects.filter(username__in=["alice", "bob"])}
    if len(found) < 2:
        raise DemoUsersMissing("The demo's customers alice and bob do not exist: run "
                               "manage.py workflows_demo_data first.")
    return found["alice"], found["bob"]


def start_live_cases(operator: Any) -> LiveCases:
    """The live cases again, placed by ``operator`` for the demo's customers."""
    alice, bob = demo_customers()
    return LiveCases(slow_order=slow_order(bob, operator),
                     failing_order=failing_order(alice, operator),
                     declined_order=declined_order(alice, operator),
                     claim=claim_to_approve(bob))
