"""docs/upgrading.md's moves hold: each old module of its first table imports with a
RemovedIn03Warning and gives the new module's names; each of the second is gone; and
nothing of ours imports an old name."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from django_workflows.deprecation import RemovedIn03Warning

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "upgrading.md").read_text()
SECTION = PAGE[PAGE.index("### Moved modules"):]
ROWS = re.findall(r"^\| `([\w.]+)` \| `([\w.]+)` \|$", SECTION, re.M)
SPLIT = SECTION.index("renamed without a deprecation path")
KEPT = [(old, new) for old, new in ROWS if SECTION.index(f"`{old}`") < SPLIT]
GONE = [(old, new) for old, new in ROWS if SECTION.index(f"`{old}`") > SPLIT]


# The modules that need an extra: the API's (Django REST framework) and the Tasks runner's.
NEEDS = {"django_workflows.api.": pytest.mark.needs_api,
         "django_workflows.runners.tasks.": pytest.mark.needs_tasks}


def with_extra(old: str, new: str) -> object:
    marks = [mark for prefix, mark in NEEDS.items() if new.startswith(prefix)]
    return pytest.param(old, new, id=old, marks=marks)


def test_the_page_lists_the_moves():
    assert len(KEPT) == 7 and len(GONE) == 11, (KEPT, GONE)


@pytest.mark.parametrize(("old", "new"), [with_extra(old, new) for old, new in KEPT])
def test_an_old_module_still_imports_with_a_warning(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(RemovedIn03Warning, match=rf"{re.escape(old)} moved to {re.escape(new)}"):
        shim = importlib.import_module(old)
    moved = importlib.import_module(new)
    public = [name for name in dir(moved) if not name.startswith("_")]
    assert public and all(getattr(shim, name) is getattr(moved, name) for name in public)


@pytest.mark.needs_tasks
def test_a_sweep_task_queued_under_the_old_path_still_runs():
    from django.utils.module_loading import import_string

    from django_workflows.runners.tasks.sweep_chain import chain_run

    sys.modules.pop("django_workflows.runners.tasks.sweep", None)
    with pytest.warns(RemovedIn03Warning):
        assert import_string("django_workflows.runners.tasks.sweep.chain_run") is chain_run


@pytest.mark.parametrize(("old", "new"), GONE, ids=[old for old, _ in GONE])
def test_a_renamed_internal_is_gone_and_its_new_name_is_there(old, new):
    def find(dotted):
        try:
            return importlib.import_module(dotted)
        except ModuleNotFoundError:
            module, _, name = dotted.rpartition(".")
            return getattr(importlib.import_module(module), name, None)

    assert find(old) is None
    assert find(new) is not None


def test_nothing_of_ours_imports_an_old_name():
    olds = [old for old, _ in KEPT + GONE]
    forms = [rf"(?:from|import)\s+{re.escape(old)}\b(?!\.)" for old in olds] + [
        rf"from\s+{re.escape(old.rpartition('.')[0])}\s+import\s+(?:\w+,\s*)*"
        rf"{re.escape(old.rpartition('.')[2])}\b" for old in olds]
    pattern = re.compile("|".join(forms))
    found = []
    for folder in ("django_workflows", "tests", "example_project", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            if path == Path(__file__).resolve() or path.parent.name == "migrations":
                continue
            for match in pattern.finditer(path.read_text()):
                found.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not found
