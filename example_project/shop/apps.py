from __future__ import annotations

from django.apps import AppConfig


class ShopConfig(AppConfig):
    """The example's shop: onboarding, order fulfilment and expense approval workflows."""

    name = "example_project.shop"
    label = "shop"
    verbose_name = "Example shop"
    default_auto_field = "django.db.models.BigAutoField"
