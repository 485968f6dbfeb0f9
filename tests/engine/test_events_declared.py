"""Every event is declared once, with what it means (``engine/events.py``): the engine emits
nothing else, an undeclared one is a type error, and the readers, the docs' list and the
API schema's enum are the declarations."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from django_workflows.engine import EVENT_TYPES, EVENTS
from django_workflows.engine import events as declared

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "django_workflows" / "engine"


def emitted() -> set[str]:
    """Every event type the engine's code emits (``.emit("...")``)."""
    found = set()
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "emit" and node.args):
                first = node.args[0]  # a name, or one of two ("a" if ok else "b")
                found |= {part.value for part in ast.walk(first)
                          if isinstance(part, ast.Constant) and isinstance(part.value, str)}
    return found


def test_the_engine_emits_only_declared_events():
    assert emitted() <= set(EVENT_TYPES)


def test_every_declared_event_but_a_worker_s_progress_is_emitted_by_the_engine():
    # operation-progress is coalesced on the attempt's row (a worker's heartbeat).
    assert set(EVENT_TYPES) - emitted() == {"operation-progress"}


@pytest.mark.typing
def test_an_undeclared_event_is_a_type_error(tmp_path):
    checked = tmp_path / "emitter.py"
    checked.write_text("from django_workflows.engine import Change\n\n\n"
                       "def emit_one(c: Change) -> None:\n"
                       '    c.emit("step-enter", step="a")\n'
                       '    c.emit("step-entered", step="a")\n')
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                             str(ROOT / "pyproject.toml"), "--no-error-summary", str(checked)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert [int(line.split(":")[1]) for line in errors] == [6], result.stdout


def test_what_ends_a_stay_is_one_answer_for_every_reader():
    from django_workflows import models
    from django_workflows.admin import timeline, workflow_page
    from django_workflows.graph import timeline_events

    assert models.STAY_END_EVENTS == declared.STAY_LEAVES == ("step-leave", "skip")
    assert workflow_page.STAY_STARTS == declared.STAY_STARTS == ("step-enter", "back",
                                                                 "rewind")
    assert timeline_events.STAY_ENDS is declared.STAY_ENDS
    assert set(timeline.CHILD_EVENTS) == set(declared.CHILD_LANE)
    # A stay that a command leaves in its own step ends it; one gone back from, as well.
    assert set(declared.STAY_LEAVES) <= set(declared.STAY_ENDS)
    assert {"back", "rewind", "cancel", "complete"} <= set(declared.STAY_ENDS)


@pytest.mark.parametrize("name", EVENT_TYPES)
def test_the_docs_list_the_event_with_its_meaning(name):
    page = (ROOT / "docs" / "concepts.md").read_text()
    row = next((line for line in page.splitlines() if line.startswith(f"| `{name}` |")),
               None)
    assert row is not None, f"docs/concepts.md has no row for the event {name}"
    assert EVENTS[name].summary in row


def test_the_docs_list_no_event_that_is_not_declared():
    page = (ROOT / "docs" / "concepts.md").read_text()
    table = [line.split("`")[1] for line in page.splitlines()
             if line.startswith("| `") and line.count("|") == 4]
    assert table and set(table) == set(EVENT_TYPES)


@pytest.mark.needs_api
@pytest.mark.django_db
def test_the_api_schema_enumerates_the_declared_event_types(client):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("schema-reader", "", "x"))
    schema = client.get("/api/schema/", {"format": "json"}).json()

    field = schema["components"]["schemas"]["Event"]["properties"]["type"]
    named = field["allOf"][0]["$ref"].rsplit("/", 1)[1]  # drf-spectacular names its enums
    assert schema["components"]["schemas"][named]["enum"] == list(EVENT_TYPES)
