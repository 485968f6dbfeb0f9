"""The docs' lists of commands are ``engine.COMMANDS``: a command added is a command
documented (the lists are written by hand, and held to the declarations here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from django_workflows import engine, services

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("name", list(engine.COMMANDS))
def test_the_docs_index_names_the_command(name):
    line = next(line for line in (DOCS / "index.md").read_text().split("\n- ")
                if "(rules.md)" in line)
    assert f"`{name}`" in line


@pytest.mark.parametrize("name", list(engine.COMMANDS))
def test_the_rules_page_has_a_section_on_the_command(name):
    headings = re.findall(r"^## (.+)$", (DOCS / "rules.md").read_text(), re.M)
    assert any(re.search(rf"\b{name}\b", heading) for heading in headings)


@pytest.mark.parametrize("name", list(engine.COMMANDS))
def test_the_services_docstring_names_the_command(name):
    assert f"``{name}" in (services.__doc__ or "")


# update_state is PATCH .../state/, not a POST of its own.
POSTED_TO_AN_INSTANCE = [name for name, command in engine.COMMANDS.items()
                         if command.acts_on in ("instance", "operation")
                         and name != "update_state"]


@pytest.mark.parametrize("name", POSTED_TO_AN_INSTANCE)
def test_the_api_page_lists_the_command_among_an_instance_s_posts(name):
    row = next(line for line in (DOCS / "api.md").read_text().splitlines()
               if line.startswith("| `POST /api/instances/<uuid>/<command>/`"))
    assert f"`{name}`" in row
