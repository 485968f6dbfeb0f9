"""The example's customer onboarding wizard and its nested identity check."""

from __future__ import annotations

import pytest

from django_workflows import services
from django_workflows.exceptions import InvalidState, NotAllowed, WorkflowNotMoved
from django_workflows.models import WorkflowInstance
from example_project.shop.models import Customer

pytestmark = pytest.mark.django_db

PROFILE = {"name": "Ann Lee", "email": "ann@example.com"}


def child_of(instance):
    return WorkflowInstance.objects.get(pk=instance.nested_id)


def fill(wf, instance, user=None, **values):
    """What the wizard page does: merge the form's fields into the state."""
    instance = wf.reload(instance)
    options = {"user": user} if user is not None else {}
    return wf.update_state(instance, {**instance.state, **values}, **options)


def to_identity_check(wf, **profile):
    """A started onboarding walked to its identity check (the plan chosen)."""
    instance = wf.create("onboarding", start=True)
    fill(wf, instance, **(profile or PROFILE))
    wf.next(instance)
    fill(wf, instance, plan="pro")
    return wf.next(instance)


def to_review(wf, instance):
    child = child_of(wf.reload(instance))
    fill(wf, child, document_type="passport", document_number="X1234567")
    wf.next(instance)  # given to the child first
    return child


def decide(wf, child, operator, decision, reason=""):
    """The operator completes the review task of the child's review step."""
    return wf.complete(child, input={"decision": decision, "reason": reason}, user=operator)


def confirm_email(instance):
    """The customer opens the link emailed to them (test_email_confirmation.py opens the
    link itself): the signal it sends."""
    return services.signal("onboarding", "email-confirmed", {"email": "ann@example.com"},
                           instance=instance)


def test_a_customer_walks_through_to_a_customer_record(wf, customer, operator):
    instance = to_identity_check(wf)
    child = to_review(wf, instance)
    decide(wf, child, operator, "approved")
    fill(wf, instance, accept_terms=True)

    opened = wf.next(instance)

    assert (opened.status, opened.current_step) == ("running", "email")  # the link is out
    customer_row = Customer.objects.get(onboarding=str(instance.pk))
    assert (customer_row.name, customer_row.email, customer_row.plan, customer_row.user) == (
        "Ann Lee", "ann@example.com", "pro", customer)
    assert customer_row.email_confirmed_at is None
    confirm_email(instance)
    done = wf.reload(instance)
    assert done.status == "completed"
    assert done.history == ["profile", "plan", "identity", "confirm", "email"]
    assert Customer.objects.get(onboarding=str(instance.pk)).email_confirmed_at is not None


def test_profile_errors_name_their_fields(wf):
    instance = wf.create("onboarding", start=True)
    fill(wf, instance, name=" ", email="ann-at-example")

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.next(instance)

    assert refused.value.code == "validation_failed"
    assert wf.reload(instance).status == "blocked"
    assert wf.reload(instance).errors == [
        "name: Enter your name", "email: Enter an email address such as ann@example.com"]


def test_fixing_the_profile_unblocks_it(wf):
    instance = wf.create("onboarding", start=True)
    with pytest.raises(WorkflowNotMoved):
        wf.next(instance)

    fill(wf, instance, **PROFILE)

    assert wf.reload(instance).status == "running"
    assert wf.reload(instance).errors == []


def test_an_invite_code_skips_the_plan_step(wf):
    instance = wf.create("onboarding", start=True)
    fill(wf, instance, **PROFILE, invite_code="partner-team")

    moved = wf.next(instance)

    assert moved.current_step == "identity"
    assert moved.skipped_steps == ["plan"]
    assert moved.history == ["profile", "identity"]


def test_an_unknown_invite_code_is_a_field_error(wf):
    instance = wf.create("onboarding", start=True)
    fill(wf, instance, **PROFILE, invite_code="NOPE")

    with pytest.raises(WorkflowNotMoved):
        wf.next(instance)

    assert wf.reload(instance).errors == [
        "invite_code: This invite code is not known; leave it empty if you have none"]


def test_next_on_the_plan_without_a_choice_asks_for_one(wf):
    instance = wf.create("onboarding", start=True)
    fill(wf, instance, **PROFILE)
    wf.next(instance)

    with pytest.raises(WorkflowNotMoved):
        wf.next(instance)

    assert wf.reload(instance).errors == [
        "plan: Choose a plan, or skip this step to start on Starter"]


def test_a_skipped_plan_starts_the_customer_on_starter(wf, operator):
    instance = wf.create("onboarding", start=True)
    fill(wf, instance, **PROFILE)
    wf.next(instance)
    wf.skip(instance)
    decide(wf, to_review(wf, instance), operator, "approved")
    fill(wf, instance, accept_terms=True)

    wf.next(instance)

    assert wf.reload(instance).skipped_steps == ["plan"]
    assert Customer.objects.get(onboarding=str(instance.pk)).plan == "starter"


def test_back_from_the_identity_checks_first_step_returns_to_the_plan(wf):
    instance = to_identity_check(wf)

    moved = wf.back(instance)

    assert moved.current_step == "plan"
    assert moved.state["plan"] == "pro"  # what was chosen is kept


def test_back_during_the_review_returns_to_the_document(wf):
    instance = to_identity_check(wf)
    child = to_review(wf, instance)

    wf.back(instance)

    assert wf.reload(child).current_step == "document"
    assert wf.reload(instance).current_step == "identity"


def test_a_document_number_must_look_like_one(wf):
    instance = to_identity_check(wf)
    child = child_of(instance)
    fill(wf, child, document_number="12")

    with pytest.raises(WorkflowNotMoved):
        wf.next(instance)

    assert wf.reload(child).errors == [
        "document_number: Enter the number as printed: 6 to 12 capital letters and digits"]


def test_the_customer_cannot_pass_the_manual_review(wf):
    instance = to_identity_check(wf)
    child = to_review(wf, instance)
    with pytest.raises(NotAllowed, match="does not allow you to update state"):
        fill(wf, child, document_number="Z9999999")  # the document under review stays
    with pytest.raises(NotAllowed, match="not a candidate"):
        wf.complete(child, input={"decision": "approved"})  # the decision is not theirs

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.next(instance)

    assert refused.value.code == "task_open"
    assert wf.reload(child).current_step == "review"


def test_an_approved_review_moves_the_onboarding_to_confirmation(wf, operator):
    instance = to_identity_check(wf)
    child = to_review(wf, instance)

    decide(wf, child, operator, "approved")

    assert wf.reload(child).status == "completed"
    assert wf.reload(instance).current_step == "confirm"


def test_a_rejection_without_a_reason_is_refused_and_changes_nothing(wf, operator):
    child = to_review(wf, to_identity_check(wf))

    with pytest.raises(WorkflowNotMoved) as refused:
        decide(wf, child, operator, "rejected")

    assert refused.value.reason == "reason: Say why the document is rejected"
    assert wf.reload(child).current_step == "review"


def test_a_rejected_document_fails_the_onboarding(wf, operator):
    instance = to_identity_check(wf)
    child = to_review(wf, instance)

    decide(wf, child, operator, "rejected", reason="The passport has expired")

    assert wf.reload(child).status == "failed"
    assert wf.reload(instance).status == "failed"
    assert wf.reload(instance).errors == [
        "Identity check rejected: The passport has expired"]


def test_confirmation_needs_the_terms_accepted(wf, operator):
    instance = to_identity_check(wf)
    decide(wf, to_review(wf, instance), operator, "approved")

    with pytest.raises(WorkflowNotMoved):
        wf.next(instance)

    assert wf.reload(instance).errors == ["accept_terms: Accept the terms to open your account"]
    assert not Customer.objects.exists()


def test_a_state_that_breaks_the_schema_is_refused_naming_the_field(wf):
    instance = wf.create("onboarding", start=True)

    with pytest.raises(InvalidState) as refused:
        fill(wf, instance, plan="gold")

    assert [error.field for error in refused.value.field_errors] == ["plan"]
    assert wf.reload(instance).state["plan"] is None


def test_the_events_tell_the_story(wf, operator):
    instance = to_identity_check(wf)
    decide(wf, to_review(wf, instance), operator, "approved")
    fill(wf, instance, accept_terms=True)
    wf.next(instance)
    confirm_email(instance)

    wf.assert_events(instance, ["start", "step-enter", "step-leave", "step-enter",
                                "step-leave", "step-enter", "step-leave", "step-enter",
                                "step-leave", "step-enter", "signal-wait", "signal",
                                "step-leave", "complete"], contains=True)
