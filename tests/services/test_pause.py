"""pause, resume, rewind and a rollback's record through the services, on the database:
what a worker reports while paused is recorded on its attempt's row and held on the
instance; resume applies it; a deadline that falls due while paused is held, its row gone;
pause and resume are for operators, not owners."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission
from django.test import override_settings

from django_workflows import Operation, Step, Transition, Workflow, registry, services
from django_workflows.engine import AttemptOutcome
from django_workflows.exceptions import NotAllowed, WorkflowNotMoved
from django_workflows.models import (
    Attempt,
    AttemptStatus,
    Deadline,
    WorkflowEvent,
    WorkflowInstance,
)
from tests.factories import UserFactory
from tests.services.test_background import HOLDING, HoldingRunner

pytestmark = pytest.mark.django_db(transaction=True)


def refund(result, ctx):
    return {"refund": f"re_{result['charge']}"}


@pytest.fixture(autouse=True)
def workflows() -> Iterator[None]:
    """``held-order``: a charge (undone by a refund), then shipping, then done."""
    definition = Workflow(id="held-order", steps=[
        Step("pay", advance="auto", timeout=60, operations=[
            Operation("charge", run=lambda ctx: {"charge": "ch_1"}, rollback=refund)]),
        Step("ship", advance="auto", operations=[Operation("label", run=lambda ctx: "lb_1")]),
        Step("done")],
        transitions=[Transition("pay", "ship"), Transition("ship", "done")])
    registry.register(definition, origin=__name__)
    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING}):
        yield
    registry.unregister(definition.id)


def row_of(instance) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=instance.pk)


def kinds(instance) -> list[str]:
    return list(WorkflowEvent.objects.filter(instance_id=instance.pk).order_by("sequence")
                .values_list("type", flat=True))


def claimed_then_paused():
    instance = services.create("held-order", start=True)
    claimed = services.claim_attempt(HoldingRunner.held.pop(), worker="w")
    assert claimed is not None
    services.pause(instance, reason="the carrier is down")
    return instance, claimed


def test_a_result_reported_while_paused_finishes_its_attempt_and_waits_on_the_instance():
    instance, claimed = claimed_then_paused()

    assert services.finish_claimed(claimed, AttemptOutcome(ok=True, value={"charge": "ch_1"}))

    row = row_of(instance)
    assert (row.status, row.current_step) == ("paused", "pay")
    assert [h.command for h in row.snap.paused.held] == ["attempt_finished"]
    assert Attempt.objects.get(token=claimed.work.token).status == AttemptStatus.FINISHED
    assert kinds(instance)[-1] == "held"
    assert HoldingRunner.held == []  # no new work handed out


def test_resume_applies_what_was_held_and_hands_out_the_next_work():
    instance, claimed = claimed_then_paused()
    services.finish_claimed(claimed, AttemptOutcome(ok=True, value={"charge": "ch_1"}))

    services.resume(instance)

    row = row_of(instance)
    assert (row.status, row.current_step, row.snap.paused) == ("running", "ship", None)
    assert row.snap.operation("charge").result == {"charge": "ch_1"}
    assert len(HoldingRunner.held) == 1  # the label's attempt
    assert kinds(instance).count("operation-succeeded") == 1


def test_a_step_timeout_that_falls_due_while_paused_is_held_and_its_row_removed():
    instance, _ = claimed_then_paused()
    deadline = Deadline.objects.get(instance=instance, kind="step-timeout")

    assert services.fire_deadline(deadline)

    assert not Deadline.objects.filter(pk=deadline.pk).exists()
    assert row_of(instance).status == "paused"
    services.resume(instance)
    row = row_of(instance)
    assert (row.status, row.errors) == ("failed", ['Workflow step "pay" timed out after 60s'])


def test_commands_refused_while_paused_say_why():
    instance, _ = claimed_then_paused()

    with pytest.raises(WorkflowNotMoved) as refused:
        services.skip(instance)

    assert refused.value.code == "paused"
    assert str(refused.value) == 'Workflow "held-order" is paused (the carrier is down): ' \
                                 "resume it first"


def test_cancel_of_a_paused_instance_keeps_the_result_its_worker_reported_for_a_rollback():
    instance, claimed = claimed_then_paused()
    services.finish_claimed(claimed, AttemptOutcome(ok=True, value={"charge": "ch_1"}))

    services.cancel(instance)
    services.rollback(instance)
    compensation = services.claim_attempt(HoldingRunner.held.pop(), worker="w")
    services.finish_claimed(compensation, AttemptOutcome(ok=True, value={"refund": "re_ch_1"}))

    row = row_of(instance)
    assert row.status == "idle"
    [item] = row.snap.rolled_back.items
    assert (item.label, item.result) == ("operation:charge", {"refund": "re_ch_1"})


def test_a_rollback_keeps_its_record_with_who_rolled_it_back():
    operator = UserFactory(username="ops", superuser=True)
    instance = services.create("held-order", start=True)
    services.finish_claimed(services.claim_attempt(HoldingRunner.held.pop(), worker="w"),
                            AttemptOutcome(ok=True, value={"charge": "ch_9"}))
    services.cancel(instance)  # the label's attempt is not running: nothing to stop

    services.rollback(instance, user=operator)
    services.finish_claimed(services.claim_attempt(HoldingRunner.held.pop(), worker="w"),
                            AttemptOutcome(ok=True, value={"refund": "re_ch_9"}))

    record = row_of(instance).snap.rolled_back
    assert record.by == str(operator.pk)
    assert (record.before.status, record.before.current_step) == ("cancelled", "ship")
    assert [(i.label, i.result) for i in record.items] == [
        ("operation:charge", {"refund": "re_ch_9"})]


def test_rewind_through_the_services_goes_back_to_the_step_named():
    instance = services.create("long-manual", start=True)
    services.next(instance)
    services.next(instance)

    services.rewind(instance, "s0")

    row = row_of(instance)
    assert (row.current_step, row.history) == ("s0", ["s0"])
    assert kinds(instance)[-1] == "rewind"


# -- who may pause ----------------------------------------------------------------------


def owner_and_operator():
    owner = UserFactory(username="owner")
    operator = UserFactory(username="operator")
    operator.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="django_workflows",
        codename__in=["view_workflowinstance", "change_workflowinstance"]))
    return owner, operator


def test_the_owner_of_an_instance_may_not_pause_it():
    owner, _ = owner_and_operator()
    instance = services.create("wizard", start=True, user=owner)

    with pytest.raises(NotAllowed, match="needs the permission to change every workflow"):
        services.pause(instance, user=owner)


def test_an_operator_pauses_and_resumes_and_the_owner_may_not_resume():
    owner, operator = owner_and_operator()
    instance = services.create("wizard", start=True, user=owner)

    services.pause(instance, user=operator, reason="audit")
    with pytest.raises(NotAllowed):
        services.resume(instance, user=owner)
    services.resume(instance, user=operator)

    assert row_of(instance).status == "running"
    assert row_of(instance).snap.paused is None


def test_the_owner_may_rewind_as_they_may_go_back():
    owner, _ = owner_and_operator()
    instance = services.create("long-manual", start=True, user=owner)
    services.next(instance, user=owner)

    services.rewind(instance, "s0", user=owner)

    assert row_of(instance).current_step == "s0"


def test_what_applies_to_the_owner_says_pause_needs_an_operator():
    owner, _ = owner_and_operator()
    instance = services.create("wizard", start=True, user=owner)

    found = services.applies(instance, user=owner)

    assert found["pause"].code == "permission_denied"
    assert found["back"].allowed or found["back"].code == "no_previous_step"


def test_the_paused_status_is_a_status_the_list_filters_by():
    instance, _ = claimed_then_paused()

    assert list(WorkflowInstance.objects.filter(status="paused").values_list("pk", flat=True)) \
        == [instance.pk]
    assert row_of(instance).get_status_display() == "Paused"
