"""Two commands a test declares, as a maintainer would add one: a class in the engine's
manner and its rule, and nothing else. ``tests/api/test_declared_commands.py`` and
``tests/admin/test_declared_commands.py`` show that each gets its API action, its schema
entry, its admin button and its service call from that alone.

- ``note(value)``: one field of any JSON type, appended to the state's ``notes``;
- ``hold_operation(operation, hours=1)``: acts on an operation of the current step that
  has not started; it records the hold on an event.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.test import override_settings
from django.urls import include, path

from django_workflows import engine
from django_workflows.engine.change import Change
from django_workflows.engine.errors import Refused


def note_rule(c: Change, command: Any) -> None:
    if c.snap.status in ("cancelled", "completed"):
        raise Refused("finished", f"{c.name} is finished")
    c.checked()
    notes = [*c.snap.state.get("notes", []), command.value]
    c.set(state={**c.snap.state, "notes": notes})
    c.emit("state-update", step=c.snap.current_step, note=command.value)


def hold_rule(c: Change, command: Any) -> None:
    operation = next((op for op in c.snap.operations if op.id == command.operation
                      and op.step == c.snap.current_step), None)
    if operation is None:
        raise Refused("no_operation", f"No operation {command.operation!r} in this step")
    if operation.status not in ("idle", "queued"):
        raise Refused("operation_started", f'Operation "{operation.id}" has started')
    c.checked()
    c.emit("operation-held", step=operation.step, operation=operation.id, hours=command.hours)


@contextmanager
def declared() -> Iterator[tuple[type[engine.PersonCommand], type[engine.PersonCommand]]]:
    """Declare ``note`` and ``hold_operation`` (and let go of them afterwards), with the
    project's URLs made anew, as a restarted site makes them."""
    site_urls_made()

    @dataclass(frozen=True)
    class Note(engine.PersonCommand, name="note", rule=note_rule, label="Note",
               summary="Add a note to the state"):
        value: Any

    @dataclass(frozen=True)
    class HoldOperation(engine.PersonCommand, name="hold_operation", rule=hold_rule,
                        label="Hold", acts_on="operation",
                        summary="Hold an operation that has not started"):
        operation: str | None = None
        hours: int = 1

    try:
        with override_settings(ROOT_URLCONF=urls_made_now()):
            yield Note, HoldOperation
    finally:
        for command in (Note, HoldOperation):
            engine.COMMANDS.pop(command.name, None)


def site_urls_made() -> None:
    """The site's own API, made from the package's commands alone: imported first here, it
    would be made with the test's (its classes are made at import)."""
    with suppress(ImportError):  # without the [api] extra
        import django_workflows.api.urls  # noqa: F401


def urls_made_now() -> types.ModuleType:
    """The test project's URLs, built from the commands declared now."""
    module = types.ModuleType("tests.urls_made_now")
    module.urlpatterns = [path("admin/", admin.site.urls)]  # type: ignore[attr-defined]
    try:
        from django_workflows.api.urls import api_urlpatterns
    except ImportError:  # without the [api] extra
        return module
    module.urlpatterns.append(  # type: ignore[attr-defined]
        path("api/", include((api_urlpatterns(), "workflows-api"))))
    return module
