"""A durable agent with the database and the immediate runner: its steps in the journal's
table, its approval a task row that only a candidate may decide, each side effect once
(its notes), and the model asked once per turn across a retry."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.exceptions import InstanceNotFound
from django_workflows.models import JournalEntry, WorkflowInstance, WorkflowTask
from tests.ai.assistant import ASKED, WORKFLOW, notes, refunder, register_assistant
from tests.ai.scripted import RefundScript
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit


def test_the_agent_asks_a_candidate_and_refunds_the_amount_they_approved():
    script = RefundScript()
    register_assistant(script)
    instance = services.create(WORKFLOW, state={"order": "A-1"}, start=True)

    task = WorkflowTask.objects.get(instance=instance, status="open")
    assert (task.title, task.candidates) == ('Approve "refund"', ["group:refunds"])
    assert task.asked["form"]["properties"]["amount"]["default"] == 30
    assert task.asked["show"] == ["order"]
    assert notes() == ["looked up A-1"]
    with pytest.raises(InstanceNotFound):  # not a candidate: not theirs to see
        services.complete(instance, input={**ASKED, "approve": True}, user=UserFactory())

    services.complete(instance, input={**ASKED, "amount": 20, "approve": True},
                      user=refunder())

    instance = WorkflowInstance.objects.get(pk=instance.pk)
    assert instance.current_step == "done"
    assert instance.snap.operation("assist").result == "Dear customer: 20 EUR of A-1 refunded."
    assert notes() == ["looked up A-1", "refunded 20 of A-1"]
    assert script.calls == 3  # one per turn: the decision's replay asked for none again
    assert list(JournalEntry.objects.filter(instance=instance).order_by("position")
                .values_list("kind", "name")) == [
        ("step", "refunds__model.request"),
        ("step", "refunds__function_toolset__<agent>.call_tool:look_up_order"),
        ("step", "refunds__model.request"),
        ("step", "refunds__conversation"),
        ("task", 'Approve "refund"'),
        ("step", "refunds__function_toolset__<agent>.call_tool:refund"),
        ("step", "refunds__model.request"),
        ("step", "refunds__conversation")]


def test_an_attempt_that_dies_after_the_refund_is_retried_without_the_turns_it_had():
    script = RefundScript(fail_on_call=3)  # the turn after the refund
    register_assistant(script, retries=1)
    instance = services.create(WORKFLOW, state={"order": "A-1"}, start=True)

    services.complete(instance, input={**ASKED, "approve": True}, user=refunder())

    instance = WorkflowInstance.objects.get(pk=instance.pk)
    operation = instance.snap.operation("assist")
    assert (operation.status, operation.attempt) == ("succeeded", 2)
    assert script.calls == 4  # three turns, and the one that failed
    assert notes() == ["looked up A-1", "refunded 30 of A-1"]  # the refund was not made twice


def test_a_denial_reaches_the_agent_and_nothing_is_refunded():
    script = RefundScript()
    register_assistant(script)
    instance = services.create(WORKFLOW, state={"order": "A-1"}, start=True)

    services.complete(instance, input={**ASKED, "approve": False,
                                       "reason": "The parcel came back intact."},
                      user=refunder())

    instance = WorkflowInstance.objects.get(pk=instance.pk)
    assert instance.snap.operation("assist").result == (
        "Dear customer, no refund: The parcel came back intact.")
    assert notes() == ["looked up A-1"]

