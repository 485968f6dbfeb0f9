"""django-workflows: durable, multi-step workflows for Django."""

from .engine import (
    Branch,
    Limit,
    Operation,
    Rate,
    Signal,
    Step,
    Task,
    Timer,
    Transition,
    Workflow,
)
from .engine.attempts import OperationContext
from .engine.context import HookContext
from .engine.journal import ReplayMismatch, WaitTimedOut
from .engine.schedules import Schedule
from .registry import register, register_schedule

__all__ = ["Branch", "HookContext", "Limit", "Operation", "OperationContext", "Rate",
           "ReplayMismatch", "Schedule", "Signal", "Step", "Task", "Timer", "Transition",
           "WaitTimedOut", "Workflow", "register", "register_schedule"]
__version__ = "0.1.0"
