"""The webhooks the tests send to (``@pytest.mark.urls("tests.webhooks.urls")``)."""

from __future__ import annotations

from django.urls import path

from django_workflows.webhooks import from_setting, webhook

from .hooks import EVENT, SplitPayments, broken_deliveries, order_deliveries, payment_deliveries

urlpatterns = [
    path("hooks/payments/", webhook("payments", secret=from_setting("PAYMENTS_WEBHOOK_SECRET"),
                                    deliveries=payment_deliveries, event_schema=EVENT,
                                    max_body_bytes=64 * 1024)),
    path("hooks/orders/", webhook("orders", secret="orders-secret", deliveries=order_deliveries,
                                  signature_header="X-Shop-Signature", tolerance=60)),
    path("hooks/broken/", webhook("broken", secret="broken-secret",
                                  deliveries=broken_deliveries)),
    path("hooks/split/", SplitPayments.as_view()),
]
