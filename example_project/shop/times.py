"""How long the shop waits for the world outside (``settings.SHOP_TIMES``, in seconds).

* ``PAYMENT_CONFIRMATION``: an order waits this long for the bank's confirmation (the
  provider's webhook), then cancels the charge (:mod:`.fulfilment`). Longer than the
  slow bank's ``SLOW_LATENCY``.
* ``PAYMENT_REMINDER``: a customer whose card was declined is reminded this long after,
  if the order still waits for another card (:mod:`.reminders`).
* ``EMAIL_LINK``: the email confirmation link works this long, and the onboarding waits
  this long for it (:mod:`.email_confirmation`).
* ``INVOICE_DUE``: an invoice is due this long after it is issued; its run sleeps until
  then before a manager decides on the lines the bank declined (:mod:`.invoices`).

The workflows read them when they are defined (at start-up); the example project's
settings read them from ``SHOP_PAYMENT_CONFIRMATION_TIMEOUT``,
``SHOP_PAYMENT_REMINDER_AFTER``, ``SHOP_EMAIL_LINK_MAX_AGE`` and ``SHOP_INVOICE_DUE_AFTER``.
"""

from __future__ import annotations

from django.conf import settings

DEFAULTS = {
    "PAYMENT_CONFIRMATION": 30 * 60.0,
    "PAYMENT_REMINDER": 3 * 24 * 3600.0,
    "EMAIL_LINK": 3 * 24 * 3600.0,
    "INVOICE_DUE": 14 * 24 * 3600.0,
}


def seconds(name: str) -> float:
    return float({**DEFAULTS, **(getattr(settings, "SHOP_TIMES", None) or {})}[name])
