"""A hook that raises: its own writes are rolled back, the failure is recorded and committed.

The ``failing-hook`` workflow: ``first`` -> ``second``, whose ``enter`` writes
a ``Note`` and then raises ``RuntimeError("enter exploded")``.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.factories import UserFactory
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db(transaction=True)


def at_second_step() -> WorkflowInstance:
    """A failing-hook instance whose "next" has entered (and failed) the second step."""
    instance = services.create("failing-hook", start=True)
    return services.next(instance)


def read_in_another_connection(instance_id) -> tuple[str, list[str]]:
    """The committed status and errors, as another connection sees them."""
    seen: list[tuple[str, list[str]]] = []

    def read() -> None:
        try:
            row = WorkflowInstance.objects.get(pk=instance_id)
            seen.append((row.status, row.errors))
        finally:
            connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    return seen[0]


@pytest.fixture
def note_writer():
    """A workflow whose second step's ``enter`` writes a note and succeeds."""
    definition = Workflow(
        id="note-writer", steps=[
            Step("first"),
            Step("second", enter=lambda ctx: Note.objects.create(text="kept")),
        ],
        transitions=[Transition("first", "second")])
    registry.register(definition, origin="tests.services.test_hooks")
    yield definition
    registry.unregister(definition.id)


@pytest.fixture
def user_recorder():
    """A workflow whose first step's ``enter`` records the acting user it was given."""
    seen = []
    definition = Workflow(id="user-recorder",
                          steps=[Step("first", enter=lambda ctx: seen.append(ctx.user))])
    registry.register(definition, origin="tests.services.test_hooks")
    yield seen
    registry.unregister(definition.id)


def test_hooks_get_the_acting_user(user_recorder):
    user = UserFactory()

    services.create("user-recorder", user=user, start=True)

    assert user_recorder == [user]


def test_a_hook_that_raises_leaves_none_of_its_writes():
    at_second_step()

    assert not Note.objects.exists()


def test_a_hook_that_succeeds_keeps_its_writes(note_writer):
    instance = services.create("note-writer", start=True)

    services.next(instance)

    assert list(Note.objects.values_list("text", flat=True)) == ["kept"]


def test_a_hook_that_raises_fails_the_workflow_with_its_message():
    instance = at_second_step()

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.status, row.current_step, row.errors) == ("failed", "second",
                                                         ["enter exploded"])


def test_a_hook_that_raises_is_recorded_as_an_error_event():
    instance = at_second_step()

    last = WorkflowEvent.objects.filter(instance=instance).order_by("sequence").last()
    assert (last.type, last.step, last.error) == ("error", "second", "enter exploded")


def test_the_command_returns_the_failed_instance_instead_of_raising():
    instance = services.create("failing-hook", start=True)

    result = services.next(instance)

    assert (result.status, result.errors) == ("failed", ["enter exploded"])


def test_the_recorded_failure_is_committed():
    instance = at_second_step()

    assert read_in_another_connection(instance.pk) == ("failed", ["enter exploded"])


def test_the_rest_of_the_command_is_kept_with_the_failure():
    instance = at_second_step()

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert row.completed_steps == ["first"]
    types = list(WorkflowEvent.objects.filter(instance=row, revision=row.revision)
                 .order_by("sequence").values_list("type", flat=True))
    assert types == ["validate", "step-leave", "step-enter", "error"]


def test_inside_the_callers_transaction_only_the_hooks_writes_are_rolled_back():
    instance = services.create("failing-hook", start=True)

    with transaction.atomic():
        Note.objects.create(text="the caller's own")
        services.next(instance)

    assert list(Note.objects.values_list("text", flat=True)) == ["the caller's own"]
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "failed"


def test_retry_runs_the_raising_hook_again_and_records_the_failure_again():
    instance = at_second_step()

    services.retry(instance)

    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.status, row.errors) == ("failed", ["enter exploded"])
    assert WorkflowEvent.objects.filter(instance=row, type="error").count() == 2
    assert not Note.objects.exists()
