"""A concurrency limit of 0 (E008)."""

from __future__ import annotations

from django_workflows import Limit, Operation, Step, Workflow

limit_max = Workflow(id="broken-limit-max", steps=[Step("charge", operations=[
    Operation("charge", run=lambda ctx: None, concurrency=Limit(key="bank", max=0))])])
