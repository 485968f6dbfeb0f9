"""Idempotency keys: the same key answers the first result, once, even when requests race."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from django_workflows import services
from django_workflows.exceptions import IdempotencyConflict, InvalidState, WorkflowNotMoved
from django_workflows.models import IdempotencyKey, WorkflowEvent, WorkflowInstance
from tests.factories import UserFactory, WorkflowInstanceFactory

JOIN_TIMEOUT = 60.0


def row_of(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


# -- create ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_with_the_same_key_returns_the_same_instance():
    first = services.create("wizard", idempotency_key="k1")
    second = services.create("wizard", idempotency_key="k1")

    assert second.pk == first.pk
    assert WorkflowInstance.objects.count() == 1


@pytest.mark.django_db
def test_a_replayed_create_does_not_start_again():
    first = services.create("wizard", start=True, idempotency_key="k1")

    second = services.create("wizard", start=True, idempotency_key="k1")

    assert (second.revision, second.status) == (first.revision, "running")
    assert WorkflowEvent.objects.count() == 2


@pytest.mark.django_db
def test_a_replayed_create_says_it_was_replayed():
    services.create("wizard", idempotency_key="k1")

    first = WorkflowInstance.objects.get()
    second = services.create("wizard", idempotency_key="k1")

    assert second.replayed is True
    assert (second.pk, second.revision) == (first.pk, 1)
    assert IdempotencyKey.objects.get(key="k1").revision == 1


@pytest.mark.django_db
def test_create_with_the_same_key_and_another_body_raises_idempotency_conflict():
    services.create("wizard", idempotency_key="k1")

    with pytest.raises(IdempotencyConflict, match='Idempotency key "k1" was already used'):
        services.create("wizard", state={"email": "a@b.com"}, idempotency_key="k1")

    assert WorkflowInstance.objects.count() == 1


@pytest.mark.django_db
def test_create_with_the_same_key_for_another_workflow_raises_idempotency_conflict():
    services.create("wizard", idempotency_key="k1")

    with pytest.raises(IdempotencyConflict):
        services.create("long-manual", idempotency_key="k1")


@pytest.mark.django_db
def test_create_with_different_keys_makes_different_instances():
    first = services.create("wizard", idempotency_key="k1")
    second = services.create("wizard", idempotency_key="k2")

    assert first.pk != second.pk


@pytest.mark.django_db
def test_keys_belong_to_their_user():
    ann, bob = UserFactory(), UserFactory()

    first = services.create("wizard", user=ann, idempotency_key="k1")
    second = services.create("wizard", user=bob, idempotency_key="k1")

    assert first.pk != second.pk
    assert (row_of(first).owner, row_of(second).owner) == (ann, bob)


@pytest.mark.django_db
def test_a_create_that_failed_does_not_keep_its_key():
    with pytest.raises(InvalidState):
        services.create("wizard", state={"age": -1}, idempotency_key="k1")

    assert not IdempotencyKey.objects.exists()


# -- commands -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_command_with_the_same_key_runs_once():
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True)

    services.next(instance, idempotency_key="n1")
    again = services.next(instance, idempotency_key="n1")

    row = row_of(instance)
    assert (row.current_step, again.current_step) == ("s1", "s1")
    assert again.revision == row.revision


@pytest.mark.django_db
def test_a_command_with_another_key_runs_again():
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True)

    services.next(instance, idempotency_key="n1")
    services.next(instance, idempotency_key="n2")

    assert row_of(instance).current_step == "s2"


@pytest.mark.django_db
def test_a_replayed_command_answers_the_instance_as_it_is_now():
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True)
    services.next(instance, idempotency_key="n1")
    services.next(instance)

    again = services.next(instance, idempotency_key="n1")

    assert again.current_step == "s2"
    assert again.replayed is True


@pytest.mark.django_db
def test_a_refused_command_with_the_same_key_raises_the_same_refusal_again():
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True)
    with pytest.raises(WorkflowNotMoved) as first:
        services.back(instance, idempotency_key="b1")
    services.next(instance)  # now "back" would move

    with pytest.raises(WorkflowNotMoved) as second:
        services.back(instance, idempotency_key="b1")

    assert (second.value.code, second.value.reason) == (first.value.code, first.value.reason)
    assert second.value.code == "no_previous_step"
    assert row_of(instance).current_step == "s1"


@pytest.mark.django_db
def test_the_same_key_on_another_command_raises_idempotency_conflict():
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True)
    services.next(instance, idempotency_key="k1")

    with pytest.raises(IdempotencyConflict):
        services.back(instance, idempotency_key="k1")

    assert row_of(instance).current_step == "s1"


@pytest.mark.django_db
def test_the_same_key_on_another_instance_raises_idempotency_conflict():
    first = WorkflowInstanceFactory(workflow="long-manual", started=True)
    second = WorkflowInstanceFactory(workflow="long-manual", started=True)
    services.next(first, idempotency_key="k1")

    with pytest.raises(IdempotencyConflict):
        services.next(second, idempotency_key="k1")

    assert row_of(second).current_step == "s0"


@pytest.mark.django_db
def test_update_state_with_the_same_key_and_another_value_raises_idempotency_conflict():
    instance = WorkflowInstanceFactory(started=True)
    services.update_state(instance, {"email": "a@b.com"}, idempotency_key="u1")

    with pytest.raises(IdempotencyConflict):
        services.update_state(instance, {"email": "c@d.com"}, idempotency_key="u1")

    assert row_of(instance).state == {"email": "a@b.com"}


# -- racing ---------------------------------------------------------------------------------


def race_create(callers: int, key: str) -> tuple[list[str], list[BaseException]]:
    """``callers`` threads create a wizard with one key at once; their ids and errors."""
    barrier = threading.Barrier(callers)
    ids: list[str] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            ids.append(str(services.create("wizard", start=True, idempotency_key=key).pk))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, daemon=True) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a caller hangs (deadlock?)"
    return ids, errors


@pytest.mark.django_db(transaction=True)
def test_two_threads_racing_create_with_one_key_make_exactly_one_instance():
    ids, errors = race_create(2, "race-1")

    assert errors == []
    assert WorkflowInstance.objects.count() == 1
    assert ids == [str(WorkflowInstance.objects.get().pk)] * 2


@pytest.mark.django_db(transaction=True)
def test_many_threads_racing_create_with_one_key_make_exactly_one_started_instance():
    ids, errors = race_create(8, "race-8")

    assert errors == []
    instance = WorkflowInstance.objects.get()
    assert ids == [str(instance.pk)] * 8
    assert instance.status == "running"
    assert WorkflowEvent.objects.filter(instance=instance, type="start").count() == 1
