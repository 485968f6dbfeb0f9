"""Webhooks: a view to mount per provider that turns its signed events into signals.

::

    path("hooks/payments/", webhook("payments", deliveries=payment_deliveries,
                                    secret=from_setting("PAYMENTS_WEBHOOK_SECRET")))

A request is checked before anything is read from it: POST only, its size, the
signature (``Webhook-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``,
within a tolerance of the clock), then the body, read strictly as a JSON object
(:mod:`django_workflows.inputs`). Each refusal is a 4xx JSON answer ``{"detail", "code"}``
and changes nothing. The project's ``deliveries(request, event)``
then names the signals to send (:class:`Delivery`), each with the provider's event id as
its message id, so a provider's retry is acknowledged and changes nothing;
:func:`services.signal <django_workflows.services.signal>` records each one, and the answer
is a 200 with what became of them. An exception in ``deliveries`` is the project's bug,
Django's 500 (``RejectEvent`` is how it refuses an event). docs/webhooks.md shows it all.

The package keeps each part in a module of its own: :mod:`.signing` (secrets and the
signature), :mod:`.deliveries` (what an event names, checked, and the service's refusals
as answers) and :mod:`.views` (the request, in the order it is checked).
"""

from .deliveries import Delivery, RejectEvent
from .signing import Secrets, from_setting, signature
from .views import WebhookView, webhook

__all__ = ["Delivery", "RejectEvent", "Secrets", "WebhookView", "from_setting", "signature",
           "webhook"]
