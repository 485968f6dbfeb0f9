"""The example's workflows; every Workflow bound here is registered when Django starts."""

from __future__ import annotations

from .expenses import expense_approval
from .fulfilment import fulfilment
from .onboarding import identity_check, onboarding

__all__ = ["expense_approval", "fulfilment", "identity_check", "onboarding"]
