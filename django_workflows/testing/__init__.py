"""Helpers for testing workflows.

- :class:`WorkflowTester`: drives instances in the database with the immediate
  runner and a fake clock (``tests`` of your project);
- :class:`LocalExecutor`: the pure engine with instances in memory, no database;
- :class:`FakeClock`: time that moves only when told to.
"""

from .clock import FakeClock
from .local import LocalExecutor
from .tester import WorkflowTester

__all__ = ["FakeClock", "LocalExecutor", "WorkflowTester"]
