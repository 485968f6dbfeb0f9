"""The typed command functions (``services/functions.py``) and the testing helpers' methods
are ``engine.COMMANDS``, field by field, and a type checker holds callers to them."""

from __future__ import annotations

import inspect
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Unpack, get_type_hints

import pytest

from django_workflows import engine, services
from django_workflows.services import functions
from django_workflows.testing import LocalExecutor, WorkflowTester

ROOT = Path(__file__).resolve().parents[2]


def line_to_add(declared: type[engine.PersonCommand]) -> str:
    """The function ``services/functions.py`` needs for a new command."""
    hints = get_type_hints(declared)
    taken = "".join(f"{f.name}: {hints[f.name]}"
                    f"{'' if f.default is MISSING else f' = {f.default!r}'}, "
                    for f in fields(declared))
    return (f"def {declared.name}(instance: InstanceRef, /, {taken}"
            f"**options: Unpack[CommandOptions]) -> WorkflowInstance: ...")


@pytest.mark.parametrize("name", list(engine.COMMANDS))
def test_each_command_has_its_typed_function_taking_its_fields_and_the_options(name):
    declared = engine.COMMANDS[name]
    function = getattr(services, name, None)
    assert function is not None and function.__module__ == functions.__name__, \
        f"services needs: {line_to_add(declared)}"
    parameters = list(inspect.signature(function).parameters.values())
    hints = get_type_hints(function, include_extras=True)
    instance, *taken, options = parameters
    assert instance.kind is inspect.Parameter.POSITIONAL_ONLY
    assert [(p.name, hints[p.name], p.default) for p in taken] == [
        (f.name, get_type_hints(declared)[f.name],
         inspect.Parameter.empty if f.default is MISSING else f.default)
        for f in fields(declared)], line_to_add(declared)
    assert options.kind is inspect.Parameter.VAR_KEYWORD
    assert hints[options.name] == Unpack[functions.CommandOptions]


def test_there_is_no_command_function_without_a_declared_command():
    defined = {name for name, value in vars(functions).items()
               if inspect.isfunction(value) and value.__module__ == functions.__name__}
    assert defined == set(engine.COMMANDS)


def test_the_options_are_what_execute_takes():
    taken = set(inspect.signature(services.execute).parameters) - {"instance", "command"}
    assert set(get_type_hints(functions.CommandOptions)) == taken


@pytest.mark.parametrize("name", list(engine.COMMANDS))
def test_the_tester_gives_each_command_through_its_service_function(name):
    assert getattr(WorkflowTester, name) is getattr(services, name)


@pytest.mark.parametrize("name", [n for n in engine.COMMANDS if n != "claim"])
def test_the_local_executor_applies_each_command_with_its_fields(name):
    # ``claim`` is the executor's claim of an attempt; a task's is command(id, Claim()).
    assert vars(LocalExecutor)[name].declared is engine.COMMANDS[name]


SNIPPET = '''
from django_workflows import engine, services
from django_workflows.testing import LocalExecutor, WorkflowTester

services.cancel("id", reason="ok", user=None, expected_revision=3)
services.complete("id", input={"decision": "approved"}, idempotency_key="k")
WorkflowTester().skip_operation("id", operation="charge")
LocalExecutor().cancel("id", reason="ok")
services.execute("id", engine.Cancel(reason="ok"))

services.cancel("id", reson="typo")
services.next("id", expected_revison=3)
WorkflowTester().cancel("id", reson="typo")
LocalExecutor().skip_operation("id", operations="charge")
services.execute("id", engine.Cancel(reson="typo"))
services.skip_operation("id", operation=3)
'''


@pytest.mark.typing
def test_a_misspelt_field_or_option_is_a_type_error(tmp_path):
    checked = tmp_path / "callers.py"
    checked.write_text(SNIPPET)
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                             str(ROOT / "pyproject.toml"), "--no-error-summary", str(checked)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    first_wrong = SNIPPET.splitlines().index('services.cancel("id", reson="typo")') + 1
    assert sorted({int(line.split(":")[1]) for line in errors}) == list(
        range(first_wrong, first_wrong + 6)), result.stdout + result.stderr
