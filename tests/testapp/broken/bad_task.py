"""A step whose task's form is not a valid JSON Schema (E005, naming the step)."""

from __future__ import annotations

from django_workflows import Step, Task, Workflow

bad_task = Workflow(id="broken-task", steps=[
    Step("decision", task=Task({"type": "decision"}, candidates=["group:managers"]))])
