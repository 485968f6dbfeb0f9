"""A rate whose window is not a positive number of seconds (E008)."""

from __future__ import annotations

from django_workflows import Operation, Rate, Step, Workflow

rate_window = Workflow(id="broken-rate-window", steps=[Step("call", operations=[
    Operation("call", run=lambda ctx: None, rate=Rate(key="partner", limit=10, per=0))])])
