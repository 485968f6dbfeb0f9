"""django-workflows: durable, multi-step workflows for Django."""

from .engine import Branch, Operation, Step, Task, Transition, Workflow
from .engine.attempts import OperationContext
from .engine.context import HookContext
from .registry import register

__all__ = ["Branch", "HookContext", "Operation", "OperationContext", "Step", "Task",
           "Transition", "Workflow", "register"]
__version__ = "0.1.0"
