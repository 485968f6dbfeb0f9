"""Every public function of ``django_workflows.services`` has its async twin
(``services/async_twins.py``): the same parameters, awaited, and a type checker holds callers
to them as to the sync ones."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from django_workflows import services
from django_workflows.services import async_twins

ROOT = Path(__file__).resolve().parents[2]


def sync_functions(module: ModuleType | SimpleNamespace) -> dict[str, object]:
    """The public sync functions of the services, by name."""
    found = {name: getattr(module, name) for name in module.__all__}
    return {name: value for name, value in found.items()
            if inspect.isfunction(value) and not inspect.iscoroutinefunction(value)}


def twins_missing(module: ModuleType | SimpleNamespace) -> list[str]:
    """The lines ``services/async_twins.py`` needs: one for each function without its twin."""
    return [f"a{name} = async_twin({name})" for name, function in sync_functions(module).items()
            if getattr(getattr(module, f"a{name}", None), "__wrapped__", None) is not function]


def test_every_public_service_function_has_its_async_twin():
    assert twins_missing(services) == []


@pytest.mark.parametrize("name", list(sync_functions(services)))
def test_the_twin_takes_what_its_function_takes_and_is_awaited(name):
    function, twin = getattr(services, name), getattr(services, f"a{name}")

    assert inspect.iscoroutinefunction(twin)
    assert inspect.signature(twin) == inspect.signature(function)
    assert (twin.__name__, twin.__module__) == (f"a{name}", async_twins.__name__)
    assert f"a{name}" in services.__all__


def test_there_is_no_twin_without_its_public_function():
    assert set(async_twins.__all__) == {f"a{name}" for name in sync_functions(services)}
    assert all(inspect.iscoroutinefunction(getattr(async_twins, name))
               for name in async_twins.__all__)


def test_a_new_service_function_without_its_twin_is_named_with_the_line_it_needs():
    def archive(instance: str) -> None:
        """A function added to the services after the twins were written."""

    grown = SimpleNamespace(**{name: getattr(services, name) for name in services.__all__},
                            archive=archive, __all__=[*services.__all__, "archive"])

    assert twins_missing(grown) == ["aarchive = async_twin(archive)"]


SNIPPET = '''
from django_workflows import services
from django_workflows.models import WorkflowInstance


async def view(pk: str) -> None:
    row: WorkflowInstance = await services.acreate("wizard", state={"email": ""}, start=True)
    row = await services.anext(row, user=None, expected_revision=row.revision)
    row = await services.acomplete(pk, input={"decision": "approved"}, idempotency_key="k")
    sent: services.SignalSent = await services.asignal("payment", "paid", {}, reference="r")
    await services.acommand(pk, "cancel", reason="ok")

    await services.anext(pk, expected_revison=3)
    await services.acancel(pk, reson="typo")
    await services.acreate("wizard", stat={})
    moved: int = await services.anext(pk)
    services.anext(pk).status
'''


@pytest.mark.typing
def test_a_twin_is_typed_as_its_function_awaited(tmp_path):
    checked = tmp_path / "async_callers.py"
    checked.write_text(SNIPPET)
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                             str(ROOT / "pyproject.toml"), "--no-error-summary", str(checked)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    # Only the snippet's errors (mypy names it by a path its cache may keep from a run before).
    errors = [line for line in result.stdout.splitlines()
              if Path(line.split(":")[0]).name == checked.name
              and ": error:" in line]
    first_wrong = SNIPPET.splitlines().index("    await services.anext(pk, expected_revison=3)")
    assert sorted({int(line.split(":")[1]) for line in errors}) == list(
        range(first_wrong + 1, first_wrong + 6)), result.stdout + result.stderr
