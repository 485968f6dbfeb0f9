"""The docs stay true: the reference pages name everything, their examples run.

The quickstart is followed to the letter by ``tests/test_quickstart.py``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from django_workflows import Branch, Operation, Step, Transition, Workflow
from django_workflows.conf import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def code_blocks(page: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(page.read_text())


def test_the_testing_page_shows_the_example_test_that_runs():
    example = (ROOT / "tests" / "example" / "test_testing_example.py").read_text()

    assert ("python", example) in code_blocks(DOCS / "testing.md")


def test_the_testing_pages_hook_example_runs():
    block = next(code for _language, code in code_blocks(DOCS / "testing.md")
                 if "HookContext(" in code)

    exec(compile(block, "docs/testing.md", "exec"), {})


def test_the_settings_page_names_every_setting():
    page = (DOCS / "settings.md").read_text()

    assert [name for name in DEFAULTS if f"`{name}`" not in page] == []


def test_the_checks_page_names_every_check():
    source = "".join((ROOT / "django_workflows" / name).read_text()
                     for name in ("checks.py", "api/checks.py"))
    ids = set(re.findall(r"\b([EW]0\d\d)\b", source))
    page = (DOCS / "checks.md").read_text()

    assert ids and sorted(i for i in ids if f"django_workflows.{i}" not in page) == []


@pytest.mark.parametrize("definition", [Workflow, Step, Transition, Operation, Branch])
def test_the_definitions_page_names_every_option(definition):
    page = (DOCS / "definitions.md").read_text()
    options = [f.name for f in dataclasses.fields(definition) if f.init]

    assert [name for name in options if f"`{name}`" not in page] == []


def test_every_link_between_docs_pages_leads_somewhere():
    broken = []
    for page in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")

    assert broken == []
