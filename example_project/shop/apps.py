from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import pre_save


class ShopConfig(AppConfig):
    """The example's shop: onboarding, order fulfilment and expense approval workflows."""

    name = "example_project.shop"
    label = "shop"
    verbose_name = "Example shop"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Django's place for a receiver: once every app's models are loaded.
        from django_workflows.models import WorkflowInstance

        from .claim_references import number_new_claim

        pre_save.connect(number_new_claim, sender=WorkflowInstance,
                         dispatch_uid="shop.number_new_claim")
