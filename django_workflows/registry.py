"""Workflow definitions by id: registered by hand or found in apps' ``workflows.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from .engine import DefinitionError, Workflow

_definitions: dict[str, Workflow] = {}
_origins: dict[str, str] = {}  # workflow id -> module that registered it
# Problems met while discovering definitions, reported by the system checks.
discovery_errors: list[tuple[str, DefinitionError]] = []


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
            f"and in {where}", "duplicate_id")
    before = set(_definitions)
    _definitions[workflow.id] = workflow
    _origins[workflow.id] = where
    try:
        for step in workflow.steps:  # nested definitions are found by id too
            if isinstance(step.nested, Workflow):
                register(step.nested, origin=f"{where} (nested in step \"{step.id}\")")
    except DefinitionError:
        for added in set(_definitions) - before:  # all or nothing
            unregister(added)
        raise
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


def autodiscover(module_name: str = "workflows") -> None:
    """Import ``<app>.workflows`` of every installed app and register its definitions.

    A broken module or a duplicate id does not crash start-up here: it is
    recorded and reported by the system checks, which name the problem.
    """
    import importlib

    from django.apps import apps
    from django.utils.module_loading import module_has_submodule

    for app_config in apps.get_app_configs():
        if not module_has_submodule(app_config.module, module_name):
            continue
        name = f"{app_config.name}.{module_name}"
        try:
            module = importlib.import_module(name)
            for value in list(vars(module).values()):
                if isinstance(value, Workflow):
                    register(value, origin=name)
        except DefinitionError as error:
            if not any(m == name and str(e) == str(error) for m, e in discovery_errors):
                discovery_errors.append((name, error))
