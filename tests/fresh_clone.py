"""A newcomer's starting point: a fresh clone of this repository, and a shell without this
test run's configuration.

The clone is of HEAD, so it holds the committed files only, as a newcomer's ``git clone``
does: commit a change before a test of a fresh clone can see it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What this test run sets for itself, and a newcomer's shell does not have.
NOT_A_NEWCOMERS = ("DWF_", "PYTEST_", "DJANGO_", "DATABASE_URL", "COV_CORE_", "COVERAGE_",
                   "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")


def fresh_clone(into: Path) -> Path:
    """``git clone`` of this repository at HEAD into ``into``."""
    if not (ROOT / ".git").exists():
        raise AssertionError(f"{ROOT} is not a git checkout: a fresh clone needs one")
    done = subprocess.run(["git", "clone", "--quiet", str(ROOT), str(into)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"git clone {ROOT} failed:\n{done.stderr}"
    return into


def newcomers_environment() -> dict[str, str]:
    """This process's environment without this test run's settings, and without its
    virtual environment on PATH: a newcomer's shell."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(NOT_A_NEWCOMERS) and key != "PYTHON"}
    ours = {str(Path(sys.prefix) / "bin"), str(Path(sys.executable).parent)} \
        if sys.prefix != sys.base_prefix else set()
    env["PATH"] = os.pathsep.join(entry for entry in env.get("PATH", "").split(os.pathsep)
                                  if entry and entry not in ours)
    return env
