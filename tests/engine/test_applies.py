""""What applies now": each command's own rule, run dry to the end of its checks."""

from __future__ import annotations

from django_workflows.engine import COMMANDS, Next, Step, Transition, Workflow, applies

from .helpers_navigation import Calls, chain, created, started, wizard


def answers(x, instance, **options):
    root = x.root_of[instance]
    return applies(x.definitions[x.roots[root].workflow], x.roots[root], x.env(),
                   target=instance, **options)


def test_an_idle_instance_may_be_started_or_cancelled_only():
    x, instance = created(wizard("a", "b"))

    found = answers(x, instance)

    assert [name for name, verdict in found.items() if verdict.allowed] == ["start", "cancel",
                                                                           "update_state"]
    assert (found["next"].code, found["retry"].code, found["rollback"].code) == (
        "not_running", "not_failed", "not_started")


def test_every_command_is_answered_in_declaration_order():
    x, instance = started(wizard("a", "b"))

    assert list(answers(x, instance)) == list(COMMANDS)


def test_the_answer_carries_the_refusal_message():
    x, instance = started(wizard("a", "b"))

    verdict = answers(x, instance)["back"]

    assert (verdict.allowed, verdict.code, verdict.message) == (
        False, "no_previous_step", 'Workflow "w" has no previous step')


def test_asking_runs_no_hook_with_effects_and_changes_nothing():
    calls = Calls()
    definition = chain(
        Step("a", enter=calls.hook("enter a"), leave=calls.hook("leave a"),
             validate=calls.hook("validate a"), compensate=calls.hook("compensate a")),
        Step("b", enter=calls.hook("enter b"), when=calls.hook("when b", True)),
        exit_guard=calls.hook("guard", True))
    x, instance = started(definition)
    before, events = x.snapshot(instance), list(x.events)
    calls.log.clear()

    found = answers(x, instance)

    assert found["next"].allowed and found["cancel"].allowed
    assert sorted(set(calls.log)) == ["guard", "validate a"]
    assert x.snapshot(instance) is before and x.events == events


def test_next_is_refused_with_the_validation_errors_the_command_would_store():
    x, instance = started(chain(Step("a", validate=lambda ctx: ["email: Enter your email"]),
                                Step("b")))

    verdict = answers(x, instance)["next"]

    assert (verdict.code, verdict.message) == ("validation_failed", "email: Enter your email")
    assert x.snapshot(instance).status == "running"  # asking stored nothing


def test_a_refusing_exit_guard_gives_its_message():
    x, instance = started(wizard("a", exit_guard=lambda ctx: "Approved claims are paid out"))

    verdict = answers(x, instance)["cancel"]

    assert (verdict.allowed, verdict.code, verdict.message) == (
        False, "cancel_refused", "Approved claims are paid out")
    assert x.cancel(instance).message == "Approved claims are paid out"


def test_next_of_a_parent_is_answered_by_its_waiting_child():
    child = Workflow("check", steps=[Step("document", validate=lambda ctx: "Add a document")])
    x, instance = started(Workflow("parent", steps=[Step("check", nested=child)]))

    verdict = answers(x, instance)["next"]

    assert (verdict.allowed, verdict.code, verdict.message) == (
        False, "validation_failed", "Add a document")


def test_only_the_asked_commands_are_answered():
    x, instance = started(wizard("a", "b"))

    assert list(answers(x, instance, commands=[COMMANDS["next"]])) == ["next"]


def test_a_child_that_completes_moves_the_command_even_when_its_parent_must_wait():
    """**Adapted:** the parent's own validation no longer refuses a next that moved the child."""
    child = Workflow("check", steps=[Step("document")])
    parent = Workflow("parent", steps=[
        Step("check", nested=child, validate=lambda ctx: "Confirm the check"), Step("done")],
        transitions=[Transition("check", "done")])
    x, instance = started(parent)

    assert answers(x, instance)["next"].allowed
    outcome = x.command(instance, Next())

    assert outcome.moved
    tree = x.snapshot(instance)
    assert (tree.nested.status, tree.status, tree.errors) == (
        "completed", "blocked", ("Confirm the check",))
