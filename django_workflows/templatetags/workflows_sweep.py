"""The sweep's banner on the admin's index page (see ``admin/sweep_banner.py``)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..admin.sweep_banner import sweep_notices

register = template.Library()


@register.simple_tag(takes_context=True)
def workflows_sweep_banner(context: Any) -> str:
    user = getattr(context.get("request"), "user", None)
    if user is None or not user.is_staff:
        return ""
    notices = sweep_notices(user)
    if not notices:
        return ""
    # Each notice's HTML is our own text and numbers; no user input in it.
    lines = format_html_join("", '<li class="{}">{}</li>',
                             ((notice.tag, mark_safe(notice.html)) for notice in notices))
    return format_html('<ul class="messagelist" id="dwf-sweep-banner">{}</ul>', lines)
