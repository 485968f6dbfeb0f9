"""Observers: the ``workflow_event`` signal and ``analytics`` get every event after commit;
their errors go to ``on_observer_error`` and never change the instance or the result.
"""

from __future__ import annotations

import logging

import pytest
from django.db import transaction
from django.test import TestCase, override_settings

from django_workflows import Step, Transition, Workflow, registry, services
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import WorkflowEvent, WorkflowInstance
from django_workflows.signals import workflow_event

pytestmark = pytest.mark.django_db(transaction=True)

IMMEDIATE = override_settings(DJANGO_WORKFLOWS={
    "RUNNER": "django_workflows.runners.immediate.Runner"})


class Recorder:
    """A signal receiver that keeps (instance, event) of every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[WorkflowInstance, WorkflowEvent]] = []

    def __call__(self, sender, instance, event, **kwargs) -> None:
        self.calls.append((instance, event))

    @property
    def types(self) -> list[str]:
        return [event.type for _instance, event in self.calls]


@pytest.fixture
def received():
    recorder = Recorder()
    workflow_event.connect(recorder, weak=False)
    yield recorder
    workflow_event.disconnect(recorder)


@pytest.fixture
def observed():
    """A two-step workflow whose analytics and observer errors are recorded."""
    record = {"analytics": [], "errors": [], "raise_in_analytics": False,
              "raise_in_handler": False}

    def analytics(event):
        record["analytics"].append(event)
        if record["raise_in_analytics"]:
            raise RuntimeError("analytics is down")

    def on_observer_error(error):
        record["errors"].append(error)
        if record["raise_in_handler"]:
            raise RuntimeError("the error handler is down too")

    definition = Workflow(id="observed", steps=[Step("a"), Step("b")],
                          transitions=[Transition("a", "b")], analytics=analytics,
                          on_observer_error=on_observer_error)
    registry.register(definition, origin="tests.services.test_observers")
    yield record
    registry.unregister(definition.id)


@pytest.fixture
def raising_receiver():
    def receiver(sender, **kwargs):
        raise ValueError("receiver is broken")

    workflow_event.connect(receiver, weak=False)
    yield receiver
    workflow_event.disconnect(receiver)


def saved(instance: WorkflowInstance) -> tuple:
    row = WorkflowInstance.objects.get(pk=instance.pk)
    return (row.status, row.current_step, row.state, row.history, row.completed_steps,
            row.errors, row.revision, row.last_event,
            list(WorkflowEvent.objects.filter(instance=row).values_list("sequence", "type")))


# -- the signal -----------------------------------------------------------------------------


def test_the_signal_is_sent_for_every_event_in_order(received):
    services.create("wizard", start=True)

    assert [(event.sequence, event.type) for _i, event in received.calls] == [
        (1, "start"), (2, "step-enter")]
    assert all(isinstance(event, WorkflowEvent) and event.pk for _i, event in received.calls)


def test_the_signal_carries_the_instance_row(received):
    instance = services.create("wizard", start=True)

    sent = [sent for sent, _event in received.calls]
    assert all(isinstance(row, WorkflowInstance) and row.pk == instance.pk for row in sent)
    assert sent[0].status == "running"


def test_the_signal_is_sent_after_commit(received):
    with transaction.atomic():
        services.create("wizard", start=True)
        assert received.calls == []

    assert received.types == ["start", "step-enter"]


def test_nothing_is_sent_for_a_rolled_back_transaction(received):
    instance = services.create("wizard")

    with pytest.raises(RuntimeError), transaction.atomic():
        services.start(instance)
        raise RuntimeError("the caller gives up")

    assert received.calls == []
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "idle"


def test_nothing_is_sent_for_a_refused_command_that_changed_nothing(received):
    instance = services.create("wizard")

    with pytest.raises(WorkflowNotMoved):
        services.next(instance)

    assert received.calls == []


def test_a_command_refused_by_validation_sends_its_validate_event(received):
    instance = services.create("wizard", start=True)
    received.calls.clear()

    with pytest.raises(WorkflowNotMoved):
        services.next(instance)

    assert received.types == ["validate"]


@IMMEDIATE
def test_events_of_background_work_are_sent_in_order(received):
    services.create("back-office", start=True)

    by_instance: dict = {}
    for instance, event in received.calls:
        by_instance.setdefault(instance.pk, []).append(event.sequence)
    (numbers,) = by_instance.values()
    assert numbers == list(range(1, len(numbers) + 1))


def test_a_childs_cancel_is_sent_before_its_parents(received):
    parent = services.create("parent", start=True)
    services.next(parent)
    received.calls.clear()

    services.cancel(parent)

    assert [(row.workflow, event.type) for row, event in received.calls] == [
        ("child-check", "cancel"), ("parent", "cancel")]


# -- analytics ------------------------------------------------------------------------------


def test_analytics_gets_every_event(observed):
    services.create("observed", start=True)

    assert [event.type for event in observed["analytics"]] == ["start", "step-enter"]


def test_analytics_is_called_after_commit(observed):
    with transaction.atomic():
        services.create("observed", start=True)
        assert observed["analytics"] == []

    assert len(observed["analytics"]) == 2


# -- errors of observers --------------------------------------------------------------------


def observed_run(record: dict, *, raise_in_analytics: bool) -> tuple:
    """Start and move an "observed" instance; (result of next, what was saved)."""
    record["raise_in_analytics"] = raise_in_analytics
    instance = services.create("observed", state={"n": 1}, start=True)
    result = services.next(instance)
    return (result.status, result.current_step, result.revision), saved(instance)


def test_a_raising_receiver_changes_neither_the_result_nor_the_instance(observed):
    expected = observed_run(observed, raise_in_analytics=False)

    def receiver(sender, **kwargs):
        raise ValueError("receiver is broken")

    workflow_event.connect(receiver, weak=False)
    try:
        got = observed_run(observed, raise_in_analytics=False)
    finally:
        workflow_event.disconnect(receiver)

    assert got == expected


def test_a_raising_receiver_goes_to_on_observer_error(observed, raising_receiver):
    services.create("observed", start=True)

    assert [str(error) for error in observed["errors"]] == ["receiver is broken"] * 2


def test_a_raising_analytics_changes_neither_the_result_nor_the_instance(observed):
    expected = observed_run(observed, raise_in_analytics=False)

    got = observed_run(observed, raise_in_analytics=True)

    assert got == expected


def test_a_raising_analytics_goes_to_on_observer_error(observed):
    observed["raise_in_analytics"] = True

    services.create("observed", start=True)

    assert [str(error) for error in observed["errors"]] == ["analytics is down"] * 2


def test_a_raising_analytics_does_not_stop_the_signal(observed, received):
    observed["raise_in_analytics"] = True

    services.create("observed", start=True)

    assert received.types == ["start", "step-enter"]


def test_a_raising_on_observer_error_is_swallowed(observed, raising_receiver):
    observed["raise_in_handler"] = True

    result = services.create("observed", start=True)

    assert result.status == "running"
    assert len(observed["errors"]) == 2


def test_observer_errors_are_logged(observed, raising_receiver, caplog):
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        instance = services.create("observed", start=True)

    messages = [record.getMessage() for record in caplog.records]
    assert f"Observer of workflow event {instance.pk} #1 failed: " \
           "ValueError('receiver is broken')" in messages


def test_with_nobody_listening_nothing_is_announced_after_commit():
    with TestCase.captureOnCommitCallbacks() as after_commit:
        services.create("wizard", start=True)

    # The immediate runner had nothing to run, and no receiver or analytics hears events.
    assert after_commit == []


def test_a_receiver_gets_the_events_the_hot_path_saved_as_models(received):
    instance = services.create("wizard", start=True)

    event = received.calls[0][1]
    assert event == WorkflowEvent.objects.get(instance=instance, sequence=1)
    event.refresh_from_db()  # saved, as the ORM saves rows: it reads it back
    assert event.instance.pk == instance.pk
