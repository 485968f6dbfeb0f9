"""A step whose task's ``show`` is one string, not a list of state keys (E005, naming the
step)."""

from __future__ import annotations

from django_workflows import Step, Task, Workflow

FORM = {"type": "object", "properties": {"decision": {"enum": ["approved", "rejected"]}}}

bad_show = Workflow(id="broken-show", steps=[
    Step("approval", task=Task(FORM, candidates=["group:managers"], show="amount"))])
