"""The docs stay true: the quickstart runs, and the reference pages name everything."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from django_workflows import Branch, Operation, Step, Transition, Workflow
from django_workflows.conf import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SETTINGS_ADDITION = "(add to your settings)"


def code_blocks(page: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(page.read_text())


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


class Project:
    """A Django project made with ``django-admin startproject``, as a reader would."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("DWF_", "PYTEST_", "DJANGO_", "DATABASE_URL"))}
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env['PATH']}"
        self.background: list[subprocess.Popen] = []
        self.run("django-admin startproject project .")

    def run(self, command: str, stdin: str | None = None) -> str:
        done = subprocess.run(command, shell=True, cwd=self.root, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, (
            f"`{command}` failed ({done.returncode}):\n{stdin or ''}\n{done.stdout}\n"
            f"{done.stderr}")
        return done.stdout

    def start(self, command: str) -> None:
        log = (self.root / f"background-{len(self.background)}.log").open("w")
        self.background.append(subprocess.Popen(
            command, shell=True, cwd=self.root, env=self.env, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True))

    def stop(self) -> None:
        """Stop every background process group, its children included."""
        for process in self.background:
            os.killpg(process.pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _group_alive(process.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _group_alive(process.pid):  # a worker still shutting down: no orphan left
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def write(self, name: str, text: str) -> None:
        if name in ("settings.py", "urls.py"):
            name = f"project/{name}"
        path = self.root / name
        if not path.parent.exists():  # a new app: a package
            path.parent.mkdir(parents=True)
            (path.parent / "__init__.py").write_text("")
        path.write_text(text)

    def carry_out(self, language: str, code: str) -> None:
        """Do what a reader does with a block: save it, add it, type it, or run it."""
        first = code.splitlines()[0]
        if language in ("python", "ini") and first == "# python manage.py shell":
            self.run("python manage.py shell", stdin=code)
        elif language == "python" and first.endswith(SETTINGS_ADDITION):
            with (self.root / "project" / "settings.py").open("a") as settings:
                settings.write("\n" + code)
        elif language in ("python", "ini") and first.startswith("# "):
            self.write(first[2:], code)
        elif language == "sh":
            for line in code.splitlines():
                if "qcluster" in line:
                    self.start(line)  # a worker runs until it is stopped
                else:
                    self.run(line)
        else:
            raise AssertionError(f"The test does not know how to run this {language!r} "
                                 f"block; say what it is in its first line:\n{code}")


@pytest.mark.slow
@pytest.mark.needs_api
@pytest.mark.needs_q2
def test_every_code_block_of_the_quickstart_runs(tmp_path):
    blocks = code_blocks(DOCS / "quickstart.md")
    project = Project(tmp_path)
    try:
        for language, code in blocks:
            project.carry_out(language, code)
    finally:
        project.stop()

    assert len(blocks) >= 9


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
