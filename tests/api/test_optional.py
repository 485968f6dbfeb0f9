"""The API is the only part of the package that imports the [api] extra's libraries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import django_workflows

pytestmark = pytest.mark.needs_api

PACKAGE = Path(django_workflows.__file__).parent
API_LIBRARIES = {"rest_framework", "django_filters", "drf_spectacular",
                 "drf_spectacular_sidecar"}


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_nothing_outside_the_api_package_imports_the_api_extra():
    offenders = {str(path.relative_to(PACKAGE)): sorted(imported_modules(path) & API_LIBRARIES)
                 for path in PACKAGE.rglob("*.py") if "api" not in path.relative_to(PACKAGE).parts}

    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_api_package_does_import_them():
    assert imported_modules(PACKAGE / "api" / "views.py") & API_LIBRARIES
