"""A definition broken in another way: version 0 (E005)."""

from __future__ import annotations

from django_workflows import Step, Workflow

invalid = Workflow(id="broken-invalid", version=0, steps=[Step("only")])
