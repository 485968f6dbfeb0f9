"""django-workflows: durable, multi-step workflows for Django."""

from .engine import Branch, Operation, Signal, Step, Task, Timer, Transition, Workflow
from .engine.attempts import OperationContext
from .engine.context import HookContext
from .engine.schedules import Schedule
from .registry import register, register_schedule

__all__ = ["Branch", "HookContext", "Operation", "OperationContext", "Schedule", "Signal", "Step",
           "Task", "Timer", "Transition", "Workflow", "register", "register_schedule"]
__version__ = "0.1.0"
