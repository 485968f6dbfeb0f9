"""A fake payment provider: it stands for an outside API (such as Stripe's) in the example.

It keeps its charges and refunds as rows (:class:`~example_project.shop.models.Charge`,
:class:`~example_project.shop.models.Refund`), so a test or an operator can see
whether anything was charged or refunded twice. It behaves like a real
provider where that matters to a workflow:

* An **idempotency key** names a request: the same key answers the first
  charge (or refund) again and never makes a second one. Retrying after a
  lost answer is therefore safe, as long as the retry sends the same key.
* A charge is **pending** until the bank confirms it, ``LATENCY`` seconds
  later. Then the provider tells the shop with a **signed webhook**: it POSTs
  the event ``charge.succeeded`` to ``WEBHOOK_URL``, signed with
  ``WEBHOOK_SECRET`` (HMAC-SHA256, docs/webhooks.md), and sends it again until
  the shop answers 2xx. The bank's side, webhook included, runs as a workflow
  of its own (:mod:`example_project.shop.bank`), so it survives restarts as a
  provider's servers would. Without a ``WEBHOOK_URL`` (the tests, the demo's data) the
  event is handed to the shop's webhook view in this process: the same view,
  the same signature check, no socket.
* A merchant may have at most ``CONCURRENT_CHARGES`` (5) charge requests in flight at
  once: the next is refused, "429 too many concurrent charges", before anything happens
  (:class:`TooManyConcurrentCharges`). Every request is kept as a row
  (:class:`~example_project.shop.models.ChargeRequest`) with how many of its merchant's
  were in flight when it came; a request takes ``CHARGE_LATENCY`` seconds. The shop's
  charge is declared with ``concurrency=Limit(key=<its merchant>, max=5)``
  (:mod:`.fulfilment`), so it never sends a sixth.
* Charge requests can fail: ``FAILURE_RATE`` of them answer "503
  unavailable" before anything happens; ``LOST_RESPONSE_RATE`` of them are
  carried out, but their answer is lost (the caller sees a timeout).
  Refunds do not fail: a rollback should be seen to work.
* Magic payment methods, as in a provider's sandbox: ``pm_card_ok``,
  ``pm_card_slow`` (confirmed after ``SLOW_LATENCY`` seconds),
  ``pm_card_unconfirmed`` (never confirmed: the bank waits for the customer, who
  never comes), ``pm_card_declined`` and ``pm_card_insufficient_funds``
  (declined at once).

Settings (``settings.SHOP_PAYMENTS``; the example project reads them from the
environment variables ``SHOP_PAYMENT_FAILURE_RATE``, ``SHOP_PAYMENT_LOST_RESPONSE_RATE``,
``SHOP_PAYMENT_LATENCY``, ``SHOP_PAYMENT_SLOW_LATENCY``, ``SHOP_PAYMENT_WEBHOOK_URL`` and
``SHOP_PAYMENT_WEBHOOK_SECRET``)::

    SHOP_PAYMENTS = {"FAILURE_RATE": 0.2, "LOST_RESPONSE_RATE": 0.0,
                     "LATENCY": 3.0, "SLOW_LATENCY": 40.0, "CHARGE_LATENCY": 0.0,
                     "WEBHOOK_URL": "http://127.0.0.1:8000/hooks/payments/",
                     "WEBHOOK_SECRET": "whsec_..."}
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from django_workflows import services

from .models import Charge, ChargeRequest, Refund

DEFAULTS: dict[str, Any] = {
    "FAILURE_RATE": 0.0,
    "LOST_RESPONSE_RATE": 0.0,
    "LATENCY": 0.0,
    "SLOW_LATENCY": 40.0,
    "CHARGE_LATENCY": 0.0,  # seconds a charge request takes before it is answered
    "WEBHOOK_URL": None,  # None: handed to the shop's webhook view in this process
    "WEBHOOK_SECRET": "whsec_example_not_secret",
}

DECLINES = {
    "pm_card_declined": "Your card was declined",
    "pm_card_insufficient_funds": "Your card has insufficient funds",
}
NEVER_CONFIRMED = "pm_card_unconfirmed"
KNOWN_METHODS = {"pm_card_ok", "pm_card_slow", NEVER_CONFIRMED, *DECLINES}

# Charge requests of one merchant in flight at once; the next one is refused.
CONCURRENT_CHARGES = 5
# A request unanswered this many seconds after its CHARGE_LATENCY has lost its caller (a
# worker killed mid-request): it no longer counts as in flight.
GIVE_UP_AFTER = 10.0

# From the OS, not a seeded state: django-q2 forks its workers from one process, and a
# copied state made them all fail (or succeed) their charges in lockstep.
_random = random.SystemRandom()


class ProviderError(Exception):
    """Anything the provider answers that is not a success."""


class ProviderUnavailable(ProviderError):
    """503: the provider did nothing; trying again later is safe."""


class ProviderTimeout(ProviderError):
    """The answer was lost: the request may or may not have been carried out."""


class TooManyConcurrentCharges(ProviderError):
    """429: the merchant has ``CONCURRENT_CHARGES`` charge requests in flight already; this
    one did nothing, and may be sent again once one of them is answered."""


class CardDeclined(ProviderError):
    """The bank said no; trying again with the same card will not help."""


class IdempotencyKeyReused(ProviderError):
    """The key was used before for a request with other parameters."""


def config() -> dict[str, Any]:
    return {**DEFAULTS, **(getattr(settings, "SHOP_PAYMENTS", None) or {})}


def webhook_secret() -> str:
    """The secret the provider signs its webhooks with, and the shop checks them with."""
    return str(config()["WEBHOOK_SECRET"])


def _happens(rate: float) -> bool:
    return rate >= 1 or (rate > 0 and _random.random() < rate)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@contextmanager
def _in_flight(merchant: str, options: dict[str, Any]) -> Iterator[None]:
    """A charge request of ``merchant``, in flight until it is answered; refused with
    :class:`TooManyConcurrentCharges` when ``CONCURRENT_CHARGES`` are in flight already."""
    now = timezone.now()
    request = ChargeRequest.objects.create(merchant=merchant, started_at=now)
    # Counted once its own row is in: of two requests that come at once, the later one
    # sees both (both may be refused then, never both let through).
    gone = now - timedelta(seconds=float(options["CHARGE_LATENCY"]) + GIVE_UP_AFTER)
    concurrent = ChargeRequest.objects.filter(
        merchant=merchant, finished_at__isnull=True, refused=False, started_at__gt=gone
    ).count()
    requests = ChargeRequest.objects.filter(pk=request.pk)
    if concurrent > CONCURRENT_CHARGES:
        requests.update(concurrent=concurrent, refused=True, finished_at=timezone.now())
        raise TooManyConcurrentCharges(
            f"Too many concurrent charges for merchant {merchant}: {CONCURRENT_CHARGES} are "
            "in flight, the most it allows (429); nothing was charged")
    requests.update(concurrent=concurrent)
    try:
        yield
    finally:
        requests.update(finished_at=timezone.now())


def busiest(merchant: str) -> int:
    """The most charge requests of ``merchant`` the provider saw in flight at once (a refused
    one included: more than ``CONCURRENT_CHARGES`` means it refused one)."""
    return max(ChargeRequest.objects.filter(merchant=merchant)
               .values_list("concurrent", flat=True), default=0)


def create_charge(*, amount_cents: int, currency: str, payment_method: str, reference: str,
                  idempotency_key: str, merchant: str) -> Charge:
    """Charge ``amount_cents`` for ``merchant``; the charge is pending until the bank
    confirms it, and the provider's webhook tells the shop when it has.

    Raises :class:`TooManyConcurrentCharges` when the merchant has
    ``CONCURRENT_CHARGES`` requests in flight, :class:`CardDeclined` for a
    declined card (the declined charge is kept under its key, as real providers
    do), :class:`ProviderUnavailable` and :class:`ProviderTimeout` as configured.
    """
    options = config()
    with _in_flight(merchant, options):
        time.sleep(float(options["CHARGE_LATENCY"]))
        return _charge(amount_cents=amount_cents, currency=currency,
                       payment_method=payment_method, reference=reference,
                       idempotency_key=idempotency_key, options=options)


def _charge(*, amount_cents: int, currency: str, payment_method: str, reference: str,
            idempotency_key: str, options: dict[str, Any]) -> Charge:
    params = {"amount_cents": amount_cents, "currency": currency,
              "payment_method": payment_method, "reference": reference}
    if _happens(options["FAILURE_RATE"]):
        raise ProviderUnavailable("Payment provider unavailable (503); nothing was charged")
    charge = Charge.objects.filter(idempotency_key=idempotency_key).first()
    if charge is None:
        charge = _insert_charge(params, idempotency_key, options)
    elif any(getattr(charge, name) != value for name, value in params.items()):
        raise IdempotencyKeyReused(f'Idempotency key "{idempotency_key}" was used for '
                                   "another charge")
    if _happens(options["LOST_RESPONSE_RATE"]):
        raise ProviderTimeout("No answer from the payment provider within 10s")
    if charge.status == Charge.DECLINED:
        raise CardDeclined(charge.decline_reason)
    return charge


def _insert_charge(params: dict[str, Any], key: str, options: dict[str, Any]) -> Charge:
    now = timezone.now()
    method = params["payment_method"]
    latency = options["SLOW_LATENCY"] if method == "pm_card_slow" else options["LATENCY"]
    declined = DECLINES.get(method) or (
        None if method in KNOWN_METHODS else f'Unknown payment method "{method}"')
    status = Charge.DECLINED if declined else \
        Charge.REQUIRES_ACTION if method == NEVER_CONFIRMED else Charge.PENDING
    try:
        with transaction.atomic():  # the charge and its bank's confirmation, or neither
            charge = Charge.objects.create(
                id=_new_id("ch"), idempotency_key=key, created_at=now,
                settles_at=now + timedelta(seconds=latency), status=status,
                decline_reason=declined or "", **params)
            if status == Charge.PENDING:
                # The bank's side (bank.py) is started by its id: it uses this module.
                services.create("fake-bank", state={"charge": charge.id}, start=True,
                                reference=f"bank:{charge.id}")
            return charge
    except IntegrityError:  # the same key, at the same moment: the first one wins
        return Charge.objects.get(idempotency_key=key)


def retrieve_charge(charge_id: str) -> Charge:
    """The charge as it is now."""
    return Charge.objects.get(pk=charge_id)


def confirm(charge_id: str) -> Charge:
    """The bank confirms a pending charge (unless the shop cancelled it first)."""
    Charge.objects.filter(pk=charge_id, status=Charge.PENDING).update(status=Charge.SUCCEEDED)
    return retrieve_charge(charge_id)


def cancel_charge(charge_id: str) -> Charge:
    """Cancel a charge the bank has not confirmed: no money moves. The charge as it is then
    (``succeeded`` when the bank confirmed it first: refund it instead)."""
    Charge.objects.filter(pk=charge_id, status__in=[Charge.PENDING, Charge.REQUIRES_ACTION]
                          ).update(status=Charge.CANCELLED)
    return retrieve_charge(charge_id)


def charges_for(reference: str) -> list[Charge]:
    return list(Charge.objects.filter(reference=reference).order_by("created_at"))


def refund(charge_id: str, *, idempotency_key: str) -> Refund:
    """Refund a whole charge. The same key answers the same refund."""
    existing = Refund.objects.filter(idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing
    charge = retrieve_charge(charge_id)
    if charge.status != Charge.SUCCEEDED:
        raise ProviderError(f"Charge {charge_id} is {charge.status}; only a succeeded charge "
                            "can be refunded")
    try:
        with transaction.atomic():
            return Refund.objects.create(id=_new_id("re"), idempotency_key=idempotency_key,
                                         charge=charge, amount_cents=charge.amount_cents)
    except IntegrityError:
        return Refund.objects.get(idempotency_key=idempotency_key)
