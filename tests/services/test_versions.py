"""Versions: an instance saved under an older version is migrated before its next command.

Each test saves an instance under version 1 of a definition registered by
hand, then registers version 2 in its place (as a deploy would).
"""

from __future__ import annotations

import pytest

from django_workflows import Step, Transition, Workflow, register, registry, services
from django_workflows.exceptions import MigrationRequired
from django_workflows.models import WorkflowEvent, WorkflowInstance

pytestmark = pytest.mark.django_db

STEPS = [Step("one"), Step("two"), Step("three")]
TRANSITIONS = [Transition("one", "two"), Transition("two", "three")]


def order(version: int, **options) -> Workflow:
    return Workflow(id="order", version=version, steps=STEPS, transitions=TRANSITIONS,
                    **options)


@pytest.fixture
def deploy():
    """Register a definition in place of the current one; unregister all at the end."""
    registered: list[str] = []

    def deploy(*definitions: Workflow) -> None:
        for definition in definitions:
            registry.unregister(definition.id)
            register(definition, origin="tests.services.test_versions")
            registered.append(definition.id)

    yield deploy
    for workflow_id in registered:
        registry.unregister(workflow_id)


def saved_under_v1(deploy, state=None) -> WorkflowInstance:
    deploy(order(1, initial={"name": "Ann"}))
    instance = services.create("order", state=state, start=True)
    assert WorkflowInstance.objects.get(pk=instance.pk).version == 1
    return instance


def row_of(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def test_the_next_command_migrates_an_instance_saved_under_version_1(deploy):
    instance = saved_under_v1(deploy)

    def migrate(data):
        state = data["state"]
        return {**data, "state": {"full_name": state["name"]}}

    deploy(order(2, migrate=migrate))
    services.next(instance)

    row = row_of(instance)
    assert row.version == 2
    assert row.state == {"full_name": "Ann"}
    assert row.current_step == "two"


def test_migrate_gets_the_instance_as_saved(deploy):
    instance = saved_under_v1(deploy)
    seen = []

    def migrate(data):
        seen.append(data)
        return data

    deploy(order(2, migrate=migrate))
    services.next(instance)

    assert len(seen) == 1
    assert seen[0]["version"] == 1
    assert seen[0]["id"] == str(instance.pk)
    assert (seen[0]["state"], seen[0]["current_step"]) == ({"name": "Ann"}, "one")


def test_a_migrated_instance_is_not_migrated_again(deploy):
    instance = saved_under_v1(deploy)
    calls = []
    deploy(order(2, migrate=lambda data: calls.append(1) or data))

    services.next(instance)
    services.next(instance)

    assert len(calls) == 1


def test_without_a_migration_the_command_raises_migration_required(deploy):
    instance = saved_under_v1(deploy)
    deploy(order(2))

    with pytest.raises(MigrationRequired) as caught:
        services.next(instance)

    assert str(caught.value) == 'Workflow "order" requires a migration from version 1'


def test_without_a_migration_nothing_changes(deploy):
    instance = saved_under_v1(deploy)
    before = row_of(instance)
    deploy(order(2))

    with pytest.raises(MigrationRequired):
        services.next(instance)

    row = row_of(instance)
    assert (row.version, row.revision, row.current_step, row.state) == (
        1, before.revision, "one", {"name": "Ann"})
    assert WorkflowEvent.objects.filter(instance=instance).count() == before.last_event


def test_a_migration_that_returns_nothing_raises_migration_required(deploy):
    instance = saved_under_v1(deploy)
    deploy(order(2, migrate=lambda data: None))

    with pytest.raises(MigrationRequired) as caught:
        services.next(instance)

    assert str(caught.value) == 'Workflow "order" requires a migration from version 1'

    assert row_of(instance).version == 1


def test_every_command_migrates_first(deploy):
    instance = saved_under_v1(deploy)
    deploy(order(2))

    with pytest.raises(MigrationRequired):
        services.cancel(instance)

    assert row_of(instance).status == "running"


def test_a_nested_child_needs_its_own_migration(deploy):
    child_v1 = Workflow(id="order-check", version=1, steps=[Step("look")])
    deploy(child_v1, Workflow(id="order-parent", steps=[Step("nest", nested="order-check")]))
    parent = services.create("order-parent", start=True)
    deploy(Workflow(id="order-check", version=2, steps=[Step("look")]))

    with pytest.raises(MigrationRequired) as caught:
        services.next(parent)

    assert str(caught.value) == 'Nested workflow "order-check" requires a migration from version 1'

    child = WorkflowInstance.objects.get(parent=parent.pk)
    assert (child.version, child.current_step) == (1, "look")


def test_a_nested_child_migrates_on_its_own(deploy):
    deploy(Workflow(id="order-check", version=1, steps=[Step("look")]),
           Workflow(id="order-parent", steps=[Step("nest", nested="order-check")]))
    parent = services.create("order-parent", start=True)
    deploy(Workflow(id="order-check", version=2, steps=[Step("look")],
                    migrate=lambda data: data))

    services.next(parent)

    child = WorkflowInstance.objects.get(parent=parent.pk)
    assert (child.version, child.status) == (2, "completed")
    assert row_of(parent).version == 1
