"""A second workflow with the id "wizard", which tests.testapp.workflows defines (E002)."""

from __future__ import annotations

from django_workflows import Step, Workflow

wizard = Workflow(id="wizard", steps=[Step("other")])
