"""Workflow definitions by id: registered by hand or found in apps' ``workflows.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from .engine import DefinitionError, Workflow

_definitions: dict[str, Workflow] = {}
_origins: dict[str, str] = {}  # workflow id -> module that registered it
# Problems met while discovering definitions, reported by the system checks.
discovery_errors: list[tuple[str, str]] = []


def _origin(workflow: Workflow) -> str:
    for name, module in list(sys.modules.items()):
        if module is not None and any(v is workflow for v in vars(module).values()):
            return name
    return "<unknown module>"


def register(workflow: Workflow, *, origin: str | None = None) -> Workflow:
    """Register a definition; two different definitions with one id is an error."""
    if not isinstance(workflow, Workflow):
        raise DefinitionError(f"register() takes a Workflow, not {workflow!r}")
    existing = _definitions.get(workflow.id)
    if existing is workflow:
        return workflow
    where = origin or _origin(workflow)
    if existing is not None:
        raise DefinitionError(
            f'Workflow id "{workflow.id}" is defined twice: in {_origins[workflow.id]} '
            f"and in {where}")
    _definitions[workflow.id] = workflow
    _origins[workflow.id] = where
    return workflow


def unregister(workflow_id: str) -> None:
    _definitions.pop(workflow_id, None)
    _origins.pop(workflow_id, None)


def get(workflow_id: str) -> Workflow:
    """The registered definition with that id (KeyError if there is none)."""
    try:
        return _definitions[workflow_id]
    except KeyError:
        raise KeyError(f'No workflow "{workflow_id}" is registered') from None


def find(workflow_id: str) -> Workflow | None:
    return _definitions.get(workflow_id)


def all_definitions() -> Iterator[Workflow]:
    return iter(list(_definitions.values()))


def origin_of(workflow_id: str) -> str | None:
    return _origins.get(workflow_id)
