"""The system check of the REST API (W040), registered when Django REST framework is installed."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.checks import Warning, register


@register()
def check_schema_class(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """drf-spectacular (``/api/schema/``) fails on a project's DRF view that has DRF's AutoSchema.

    The API's own views use drf-spectacular's whatever the setting says.
    """
    if not (apps.is_installed("rest_framework") and apps.is_installed("drf_spectacular")):
        return []
    from drf_spectacular.openapi import AutoSchema
    from rest_framework.settings import api_settings

    schema_class = api_settings.DEFAULT_SCHEMA_CLASS
    if isinstance(schema_class, type) and issubclass(schema_class, AutoSchema):
        return []
    name = getattr(schema_class, "__module__", "") + "." + getattr(schema_class, "__qualname__",
                                                                   repr(schema_class))
    return [Warning(
        f'REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] is {name.lstrip(".")}, not drf-spectacular\'s '
        "AutoSchema: the schema at /api/schema/ answers 500 once the project has a DRF view "
        "of its own",
        hint='Set REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "drf_spectacular.openapi.AutoSchema".',
        id="django_workflows.W040")]
