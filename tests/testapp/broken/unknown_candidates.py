"""A task whose candidates name a group and a permission that do not exist (W020)."""

from __future__ import annotations

from django_workflows import Step, Task, Workflow

FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}

unknown_candidates = Workflow(id="broken-candidates", steps=[
    Step("decision", task=Task(FORM, candidates=["group:nobody-here", "perm:shop.no_such",
                                                 "user:anyone"]))])
