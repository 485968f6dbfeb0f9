"""A branch's limit whose key is neither a string nor a callable (E008)."""

from __future__ import annotations

from django_workflows import Branch, Limit, Step, Workflow

limit_key = Workflow(id="broken-limit-key", steps=[Step("ship", parallel=[
    Branch("courier", run=lambda ctx: None, concurrency=Limit(key=7, max=2))])])  # type: ignore[arg-type]
