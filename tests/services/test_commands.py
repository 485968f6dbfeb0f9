"""Every command through the service: what it saves, and what a refusal leaves alone.

The ``wizard`` workflow: ``account`` (validate: an email is required) ->
``plan`` (only for ``.com`` addresses) -> ``confirm``.
"""

from __future__ import annotations

import uuid

import pytest

from django_workflows import services
from django_workflows.exceptions import (
    InstanceNotFound,
    NotAllowed,
    StaleRevision,
    UnknownWorkflow,
    WorkflowNotMoved,
)
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.factories import UserFactory, WorkflowInstanceFactory

pytestmark = pytest.mark.django_db


def reload(instance: WorkflowInstance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def events(instance: WorkflowInstance) -> list[tuple[int, str, str, int]]:
    """(sequence, type, step, revision) of every saved event, in order."""
    return list(WorkflowEvent.objects.filter(instance=instance).order_by("sequence")
                .values_list("sequence", "type", "step", "revision"))


def snapshot_of(instance: WorkflowInstance) -> tuple:
    """Everything a command could change on the row, and the number of events."""
    row = reload(instance)
    return (row.status, row.current_step, row.state, row.snapshot, row.revision,
            row.last_event, row.updated_at, row.completed_at,
            WorkflowEvent.objects.filter(instance=row).count())


def refused(call, *args, **kwargs) -> WorkflowNotMoved:
    with pytest.raises(WorkflowNotMoved) as caught:
        call(*args, **kwargs)
    return caught.value


def with_email(email: str = "ann@example.com", **options) -> WorkflowInstance:
    """A started wizard whose state has an email."""
    instance = WorkflowInstanceFactory(started=True, **options)
    return services.update_state(instance, {"email": email, "plan": None})


# -- create ---------------------------------------------------------------------------------


def test_create_saves_an_idle_instance_with_the_initial_state():
    instance = services.create("wizard")

    row = reload(instance)
    assert (row.workflow, row.version, row.status) == ("wizard", 1, "idle")
    assert row.state == {"email": "", "plan": None}
    assert (row.current_step, row.revision, row.started_at) == ("", 1, None)
    assert events(row) == []


def test_create_returns_the_saved_row():
    instance = services.create("wizard")

    assert instance == reload(instance)
    assert instance.pk == reload(instance).pk


def test_create_accepts_a_definition_object():
    from tests.testapp.workflows import wizard

    assert reload(services.create(wizard)).workflow == "wizard"


def test_create_keeps_a_given_state():
    instance = services.create("wizard", state={"email": "a@b.org", "plan": "pro"})

    assert reload(instance).state == {"email": "a@b.org", "plan": "pro"}


def test_create_records_the_owner():
    owner = UserFactory()

    instance = services.create("wizard", owner=owner)

    assert reload(instance).owner == owner


def test_create_records_the_acting_user_as_owner_when_no_owner_is_given():
    user = UserFactory()

    instance = services.create("wizard", user=user)

    assert reload(instance).owner == user


def test_create_without_a_user_has_no_owner():
    assert reload(services.create("wizard")).owner is None


def test_create_of_an_unknown_workflow_raises_and_saves_nothing():
    with pytest.raises(UnknownWorkflow, match='No workflow "nope" is registered'):
        services.create("nope")

    assert not WorkflowInstance.objects.exists()


def test_create_with_start_saves_a_running_instance():
    instance = services.create("wizard", start=True)

    row = reload(instance)
    assert (row.status, row.current_step, row.revision) == ("running", "account", 2)
    assert row.started_at is not None
    assert events(row) == [(1, "start", "", 2), (2, "step-enter", "account", 2)]


# -- start ----------------------------------------------------------------------------------


def test_start_enters_the_first_step_with_revision_plus_one():
    instance = services.create("wizard")

    result = services.start(instance)

    row = reload(instance)
    assert (row.status, row.current_step, row.revision) == ("running", "account", 2)
    assert row.history == ["account"]
    assert row.started_at is not None
    assert (result.status, result.revision) == ("running", 2)


def test_start_writes_events_numbered_from_one_with_the_revision_that_wrote_them():
    instance = services.start(services.create("wizard"))

    assert events(instance) == [(1, "start", "", 2), (2, "step-enter", "account", 2)]
    assert reload(instance).last_event == 2


def test_events_record_the_acting_user():
    user = UserFactory()
    instance = services.start(services.create("wizard", owner=user), user=user)

    assert {event.actor for event in WorkflowEvent.objects.filter(instance=instance)} == {user}


def test_cancel_records_its_reason_on_the_cancel_event():
    instance = services.cancel(services.create("wizard", start=True), reason="Duplicate")

    assert WorkflowEvent.objects.get(instance=instance, type="cancel").data == {
        "reason": "Duplicate"}


def test_a_command_given_a_value_it_does_not_take_is_a_type_error():
    instance = services.create("wizard", start=True)

    with pytest.raises(TypeError, match="takes 0 value"):
        services.command(instance, "next", "why")


def test_a_user_who_does_not_own_the_instance_may_not_act_on_it():
    instance = services.create("wizard", start=True, owner=UserFactory())

    with pytest.raises(InstanceNotFound):
        services.next(instance, user=UserFactory())


def test_a_user_who_sees_but_may_not_change_gets_not_allowed():
    viewer = UserFactory(permissions=["view_workflowinstance"])
    instance = services.create("wizard", start=True, owner=UserFactory())

    with pytest.raises(NotAllowed, match="do not have permission to cancel"):
        services.cancel(instance, user=viewer)
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "running"


def test_events_of_a_command_without_a_user_have_no_actor():
    instance = services.start(services.create("wizard"))

    assert not WorkflowEvent.objects.filter(instance=instance, actor__isnull=False).exists()


def test_start_of_a_started_instance_is_refused_and_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = snapshot_of(instance)

    refusal = refused(services.start, instance)

    assert refusal.code == "already_started"
    assert snapshot_of(instance) == before


def test_start_accepts_the_instance_id_as_a_string_or_uuid():
    first, second = services.create("wizard"), services.create("wizard")

    services.start(str(first.pk))
    services.start(uuid.UUID(str(second.pk)))

    assert reload(first).status == reload(second).status == "running"


def test_a_command_on_an_unknown_instance_raises_instance_not_found():
    with pytest.raises(InstanceNotFound):
        services.start(uuid.uuid4())


def test_a_command_finds_an_instance_by_its_id_in_any_spelling():
    instance = services.create("wizard")

    started = services.start(str(instance.pk).upper())

    assert (started.pk, started.status) == (instance.pk, "running")


def test_a_command_on_a_malformed_id_raises_instance_not_found():
    with pytest.raises(InstanceNotFound):
        services.start("not-an-id")


# -- next -----------------------------------------------------------------------------------


def test_next_moves_to_the_following_step():
    instance = with_email()

    services.next(instance)

    row = reload(instance)
    assert (row.status, row.current_step) == ("running", "plan")
    assert row.completed_steps == ["account"]
    assert row.history == ["account", "plan"]


def test_next_saves_revision_plus_one_and_appends_its_events():
    instance = with_email()
    revision = reload(instance).revision

    services.next(instance)

    assert reload(instance).revision == revision + 1
    assert events(instance)[-3:] == [
        (4, "validate", "account", revision + 1),
        (5, "step-leave", "account", revision + 1),
        (6, "step-enter", "plan", revision + 1),
    ]


def test_event_numbers_run_from_one_without_gaps_across_commands():
    instance = with_email()
    services.next(instance)
    services.back(instance)
    services.next(instance)

    numbers = [sequence for sequence, *_ in events(instance)]
    assert numbers == list(range(1, len(numbers) + 1))
    assert reload(instance).last_event == len(numbers)


def test_each_command_writes_its_events_with_its_own_revision():
    instance = with_email()
    services.next(instance)

    revisions = {type_: revision for _seq, type_, _step, revision in events(instance)}
    assert revisions["start"] == 2
    assert revisions["state-update"] == 3
    assert revisions["step-leave"] == 4


def test_next_records_an_unavailable_step_as_skipped():
    instance = with_email("ann@example.org")

    services.next(instance)

    row = reload(instance)
    assert row.current_step == "confirm"
    assert row.skipped_steps == ["plan"]


def test_next_on_the_last_step_completes_the_workflow():
    instance = with_email()
    services.next(instance)
    services.next(instance)

    services.next(instance)

    row = reload(instance)
    assert row.status == "completed"
    assert row.completed_at is not None
    assert row.completed_steps == ["account", "plan", "confirm"]
    assert events(row)[-1][1] == "complete"


def test_next_refused_by_validation_stores_the_errors_and_blocks():
    instance = WorkflowInstanceFactory(started=True)
    revision = reload(instance).revision

    refusal = refused(services.next, instance)

    assert refusal.code == "validation_failed"
    assert refusal.reason == "Email is required"
    row = reload(instance)
    assert (row.status, row.current_step, row.errors) == ("blocked", "account",
                                                         ["Email is required"])
    assert row.revision == revision + 1
    assert events(row)[-1] == (3, "validate", "account", revision + 1)


def test_the_refusal_carries_the_saved_instance():
    instance = WorkflowInstanceFactory(started=True)

    refusal = refused(services.next, instance)

    assert refusal.instance.pk == instance.pk
    assert refusal.instance.status == "blocked"


def test_next_of_an_idle_instance_is_refused_and_changes_nothing():
    instance = services.create("wizard")
    before = snapshot_of(instance)

    refusal = refused(services.next, instance)

    assert refusal.code == "not_running"
    assert snapshot_of(instance) == before


# -- back -----------------------------------------------------------------------------------


def test_back_returns_to_the_previous_step():
    instance = with_email()
    services.next(instance)
    revision = reload(instance).revision

    services.back(instance)

    row = reload(instance)
    assert (row.status, row.current_step, row.history) == ("running", "account", ["account"])
    assert row.completed_steps == []
    assert row.revision == revision + 1
    assert events(row)[-1][1:] == ("back", "account", revision + 1)


def test_back_on_the_first_step_is_refused_and_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = snapshot_of(instance)

    refusal = refused(services.back, instance)

    assert refusal.code == "no_previous_step"
    assert snapshot_of(instance) == before


# -- skip -----------------------------------------------------------------------------------


def test_skip_records_the_step_as_skipped_and_moves_on():
    instance = WorkflowInstanceFactory(started=True)
    revision = reload(instance).revision

    services.skip(instance)

    row = reload(instance)
    # "plan" is unavailable without a .com email: recorded skipped too, "confirm" entered.
    assert (row.current_step, row.skipped_steps) == ("confirm", ["account", "plan"])
    assert row.completed_steps == []
    assert row.revision == revision + 1
    assert [type_ for _s, type_, _st, _r in events(row)][-2:] == ["skip", "step-enter"]


def test_skip_of_a_blocked_instance_moves_on():
    instance = WorkflowInstanceFactory(blocked=True)

    services.skip(instance)

    row = reload(instance)
    assert (row.status, row.current_step, row.errors) == ("running", "confirm", [])


def test_skip_of_an_idle_instance_is_refused_and_changes_nothing():
    instance = services.create("wizard")
    before = snapshot_of(instance)

    assert refused(services.skip, instance).code == "not_running"
    assert snapshot_of(instance) == before


# -- validate -------------------------------------------------------------------------------


def test_validate_with_errors_blocks_and_stores_them():
    instance = WorkflowInstanceFactory(started=True)

    refusal = refused(services.validate, instance)

    assert refusal.code == "validation_failed"
    row = reload(instance)
    assert (row.status, row.errors) == ("blocked", ["Email is required"])


def test_validate_without_errors_unblocks_and_stays_on_the_step():
    instance = WorkflowInstanceFactory(blocked=True)
    services.update_state(instance, {"email": "ann@example.com"})
    revision = reload(instance).revision

    services.validate(instance)

    row = reload(instance)
    assert (row.status, row.current_step, row.errors) == ("running", "account", [])
    assert row.revision == revision + 1
    assert events(row)[-1][1:] == ("validate", "account", revision + 1)


def test_validate_before_any_step_is_refused_and_changes_nothing():
    instance = services.create("wizard")
    before = snapshot_of(instance)

    assert refused(services.validate, instance).code == "no_current_step"
    assert snapshot_of(instance) == before


# -- update_state ---------------------------------------------------------------------------


def test_update_state_with_a_value_replaces_the_state():
    instance = WorkflowInstanceFactory(started=True)
    revision = reload(instance).revision

    services.update_state(instance, {"email": "ann@example.com", "plan": "pro"})

    row = reload(instance)
    assert row.state == {"email": "ann@example.com", "plan": "pro"}
    assert row.revision == revision + 1
    assert events(row)[-1][1:] == ("state-update", "account", revision + 1)


def test_update_state_with_a_function_gets_the_current_state():
    instance = services.create("wizard", state={"email": "ann@example.com", "plan": None})

    services.update_state(instance, lambda state: {**state, "plan": "free"})

    assert reload(instance).state == {"email": "ann@example.com", "plan": "free"}


def test_update_state_unblocks_a_blocked_instance():
    instance = WorkflowInstanceFactory(blocked=True)

    services.update_state(instance, {"email": "ann@example.com"})

    row = reload(instance)
    assert (row.status, row.errors) == ("running", [])


# -- retry ----------------------------------------------------------------------------------


def test_retry_of_a_blocked_instance_runs_the_step_again():
    instance = WorkflowInstanceFactory(blocked=True)
    revision = reload(instance).revision

    services.retry(instance)

    row = reload(instance)
    assert (row.status, row.current_step, row.errors) == ("running", "account", [])
    assert row.revision == revision + 1
    assert events(row)[-1][1:] == ("retry", "account", revision + 1)


def test_retry_of_a_running_instance_is_refused_and_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = snapshot_of(instance)

    assert refused(services.retry, instance).code == "not_failed"
    assert snapshot_of(instance) == before


# -- cancel ---------------------------------------------------------------------------------


def test_cancel_saves_a_cancelled_instance():
    instance = WorkflowInstanceFactory(started=True)
    revision = reload(instance).revision

    services.cancel(instance)

    row = reload(instance)
    assert row.status == "cancelled"
    assert row.completed_at is not None
    assert row.revision == revision + 1
    assert events(row)[-1][1:] == ("cancel", "account", revision + 1)


def test_cancel_twice_is_refused_and_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    services.cancel(instance)
    before = snapshot_of(instance)

    assert refused(services.cancel, instance).code == "already_cancelled"
    assert snapshot_of(instance) == before


def test_cancel_of_a_completed_instance_is_refused_and_changes_nothing():
    instance = WorkflowInstanceFactory(workflow="wizard", started=True)
    services.skip(instance)
    services.skip(instance)
    assert reload(instance).status == "completed"
    before = snapshot_of(instance)

    assert refused(services.cancel, instance).code == "completed"
    assert snapshot_of(instance) == before


def test_commands_after_a_cancel_are_refused_as_cancelled():
    instance = WorkflowInstanceFactory(started=True)
    services.cancel(instance)
    before = snapshot_of(instance)

    codes = {name: refused(services.command, instance, name).code
             for name in ("start", "next", "back", "skip", "validate", "retry")}

    assert set(codes.values()) == {"cancelled"}, codes
    assert snapshot_of(instance) == before


# -- rollback -------------------------------------------------------------------------------


def test_rollback_makes_the_instance_idle_with_its_initial_state():
    instance = with_email()
    services.next(instance)

    services.rollback(instance)

    row = reload(instance)
    assert (row.status, row.current_step) == ("idle", "")
    assert row.state == {"email": "", "plan": None}
    assert (row.history, row.completed_steps) == ([], [])


def test_rollback_keeps_the_event_log():
    instance = with_email()
    count = len(events(instance))

    services.rollback(instance)

    saved = events(instance)
    assert len(saved) > count
    assert [sequence for sequence, *_ in saved] == list(range(1, len(saved) + 1))
    assert "rollback" in [type_ for _s, type_, _st, _r in saved]


def test_rollback_of_an_instance_that_never_started_is_refused_and_changes_nothing():
    instance = services.create("wizard")
    before = snapshot_of(instance)

    assert refused(services.rollback, instance).code == "not_started"
    assert snapshot_of(instance) == before


# -- expected_revision ----------------------------------------------------------------------


def test_a_stale_expected_revision_raises_and_changes_nothing():
    instance = with_email()
    revision = reload(instance).revision
    before = snapshot_of(instance)

    with pytest.raises(StaleRevision) as caught:
        services.next(instance, expected_revision=revision - 1)

    assert (caught.value.expected, caught.value.actual) == (revision - 1, revision)
    assert snapshot_of(instance) == before


def test_a_stale_expected_revision_is_checked_before_the_rules():
    instance = services.create("wizard")
    before = snapshot_of(instance)

    with pytest.raises(StaleRevision):
        services.next(instance, expected_revision=7)  # "next" would be refused anyway

    assert snapshot_of(instance) == before


def test_the_current_expected_revision_lets_the_command_run():
    instance = with_email()

    services.next(instance, expected_revision=reload(instance).revision)

    assert reload(instance).current_step == "plan"


# -- command by name ------------------------------------------------------------------------


def test_command_by_name_runs_that_command():
    instance = with_email()

    result = services.command(instance, "next")

    assert result.current_step == "plan"
    assert reload(instance).current_step == "plan"


def test_command_by_name_passes_its_options_on():
    instance = with_email()

    with pytest.raises(StaleRevision):
        services.command(instance, "next", expected_revision=0)


def test_an_unknown_command_name_raises_value_error_and_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = snapshot_of(instance)

    with pytest.raises(ValueError, match="Unknown command 'jump'; expected one of start, next"):
        services.command(instance, "jump")

    assert snapshot_of(instance) == before


def test_the_instance_given_to_a_command_shows_the_new_state_afterwards():
    instance = services.create("wizard")

    services.start(instance)

    assert (instance.status, instance.current_step, instance.revision) == (
        "running", "account", reload(instance).revision)


def test_the_instance_given_to_a_refused_command_shows_the_stored_errors():
    instance = services.create("wizard", start=True)

    with pytest.raises(WorkflowNotMoved):
        services.next(instance)

    assert (instance.status, instance.errors) == ("blocked", ["Email is required"])
