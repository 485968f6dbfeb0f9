"""The sweep's warning on the admin's index page (see ``admin/sweep_banner.py``)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import mark_safe

from ..admin.sweep_banner import sweep_warning

register = template.Library()


@register.simple_tag(takes_context=True)
def workflows_sweep_banner(context: Any) -> str:
    user = getattr(context.get("request"), "user", None)
    if user is None or not user.is_staff:
        return ""
    text = sweep_warning()
    return mark_safe(f'<ul class="messagelist" id="dwf-sweep-banner"><li class="warning">'
                     f"{text}</li></ul>") if text else ""
