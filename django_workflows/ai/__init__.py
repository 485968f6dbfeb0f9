"""Durable Pydantic AI agents, their approvals asked as tasks (the ``ai`` extra;
``docs/agents.md``).

Importing this module needs ``pydantic-ai-slim`` (``pip install
"django-durable-workflows[ai]"``); nothing else in django_workflows imports it.
"""

try:
    import pydantic_ai  # noqa: F401
except ImportError as error:
    raise ImportError('django_workflows.ai needs the ai extra: pip install '
                      '"django-durable-workflows[ai]"') from error

from .approvals import Approvals
from .durability import DjangoWorkflowsDurability, StepRetries
from .run import run_agent

__all__ = ["Approvals", "DjangoWorkflowsDurability", "StepRetries", "run_agent"]
