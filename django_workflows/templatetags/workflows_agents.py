"""Template tags of durable agents: an instance's agent runs as conversations (the
instance page; ``reading/conversations.py`` reads them, with no import of Pydantic AI)."""

from __future__ import annotations

import json
from typing import Any

from django import template

from ..models import WorkflowInstance
from ..reading.conversations import conversations_of

register = template.Library()


@register.inclusion_tag("admin/django_workflows/workflowinstance/includes/conversation.html")
def agent_conversations(instance: WorkflowInstance) -> dict[str, Any]:
    """The agent runs of ``instance``'s operations, each turn by turn."""
    return {"conversations": conversations_of(instance)}


@register.filter
def as_json(value: Any) -> str:
    """A tool call's arguments or result as indented JSON (text stays text)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)
