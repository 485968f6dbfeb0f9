"""A hook that is not callable (E004)."""

from __future__ import annotations

from django_workflows import Step, Workflow

not_callable = Workflow(id="broken-not-callable", steps=[Step("greet", enter="say hello")])
