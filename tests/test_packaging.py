"""The package as published: its metadata names what tox tests, the sdist carries the tests.

The sdist is built for real (``python -m build``, which builds the wheel from the
sdist, so the sdist alone must be enough to build it).
"""

from __future__ import annotations

import configparser
import fcntl
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def tox_matrix() -> list[tuple[str, str]]:
    """(Python, Django) of every ``pyXY-djangoNM`` env that a plain ``tox run`` runs."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tox.ini")
    pairs = []
    for env in config["tox"]["env_list"].split():
        if found := re.fullmatch(r"py3(\d+)-django(\d)(\d)", env):
            pairs.append((f"3.{found[1]}", f"{found[2]}.{found[3]}"))
    return pairs


def classified(prefix: str) -> set[str]:
    return {c.removeprefix(prefix) for c in PROJECT["classifiers"]
            if re.fullmatch(re.escape(prefix) + r"\d+\.\d+", c)}


def django_requirement() -> SpecifierSet:
    (django,) = [Requirement(r) for r in PROJECT["dependencies"]
                 if Requirement(r).name.lower() == "django"]
    return django.specifier


def test_the_tox_matrix_covers_python_3_11_to_3_13_and_django_5_2_to_6_1():
    pythons = {python for python, _ in tox_matrix()}
    djangos = {django for _, django in tox_matrix()}

    assert (pythons, djangos) == ({"3.11", "3.12", "3.13"}, {"5.2", "6.0", "6.1"})


def test_classifiers_name_every_python_and_django_of_the_tox_matrix():
    assert classified("Programming Language :: Python :: ") == {p for p, _ in tox_matrix()}
    assert classified("Framework :: Django :: ") == {d for _, d in tox_matrix()}


def test_the_requirements_admit_every_python_and_django_of_the_tox_matrix():
    for python, django in tox_matrix():
        assert f"{python}.0" in SpecifierSet(PROJECT["requires-python"]), python
        assert f"{django}.0" in django_requirement(), django
        assert f"{django}.99" in django_requirement(), django


def test_the_licence_is_mit_with_its_text_in_license():
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "django-durable-workflows contributors" in text


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it."""
    out = tmp_path_factory.mktemp("dist")
    # The sdist's egg-info is written in the source tree: test runs side by side (scripts/test
    # runs two) build one after the other.
    lock = Path(tempfile.gettempdir()) / (
        f"dwf-build-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}.lock")
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                               str(out), str(ROOT)], capture_output=True, text=True,
                              timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.mark.slow
def test_the_sdist_carries_the_tests_docs_example_project_scripts_and_tox_ini(built):
    with tarfile.open(built["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1]: m for m in sdist.getmembers() if "/" in m.name}

    for path in ("LICENSE", "README.md", "tox.ini", "manage.py", "tests/conftest.py",
                 "tests/settings.py", "docs/index.md", "example_project/settings.py",
                 "scripts/test", "scripts/demo", "scripts/lib/venv.sh", "bench/load.py",
                 "django_workflows/templates/admin/django_workflows/workflowinstance/"
                 "date_hierarchy.html"):
        assert path in members, path
    assert members["scripts/test"].mode & 0o111  # still executable once unpacked
    assert not [name for name in members if "__pycache__" in name or ".sqlite3" in name
                or name.endswith(".pyc")]


@pytest.mark.slow
def test_the_wheel_carries_the_app_with_its_templates_and_licence_and_no_tests(built):
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata_text = wheel.read(metadata).decode()

    assert "django_workflows/py.typed" in names
    assert "django_workflows/templates/admin/django_workflows/workflowinstance/" \
        "date_hierarchy.html" in names
    assert "django_workflows/static/django_workflows/admin.css" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert {name.split("/")[0] for name in names if not name.startswith("django_durable")} \
        == {"django_workflows"}
    assert "License-Expression: MIT" in metadata_text
    assert "Project-URL: Source, https://github.com/" in metadata_text
