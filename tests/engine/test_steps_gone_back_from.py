"""``back`` and ``rewind`` remove the steps they go back from, as well as the step they
return to, from ``completed_steps``: the completed steps are those of the history before
the current step, also when a completed instance reopens."""

from __future__ import annotations

from django_workflows.engine import Step, Transition, Workflow

from .helpers_navigation import started, wizard


def completed(*steps: str) -> tuple:
    x, instance = started(wizard(*steps))
    for _ in steps:
        x.next(instance)
    assert x.snapshot(instance).status == "completed"
    assert x.snapshot(instance).completed_steps == steps
    return x, instance


def test_back_on_a_completed_instance_leaves_the_last_step_not_completed():
    x, instance = completed("account", "plan", "confirm")

    x.back(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.current_step, snapshot.history) == (
        "running", "plan", ("account", "plan"))
    assert snapshot.completed_steps == ("account",)


def test_rewind_on_a_completed_instance_leaves_none_of_the_steps_left_completed():
    x, instance = completed("a", "b", "c", "d")

    x.rewind(instance, "b")

    snapshot = x.snapshot(instance)
    assert (snapshot.current_step, snapshot.history) == ("b", ("a", "b"))
    assert snapshot.completed_steps == ("a",)


def test_rewind_to_the_first_step_of_a_completed_instance_leaves_nothing_completed():
    x, instance = completed("a", "b", "c")

    x.rewind(instance, "a")

    assert x.snapshot(instance).completed_steps == ()


def test_going_forward_again_completes_the_steps_again():
    x, instance = completed("a", "b", "c")
    x.rewind(instance, "a")

    for _ in range(3):
        x.next(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.status, snapshot.completed_steps) == ("completed", ("a", "b", "c"))


def looping() -> Workflow:
    """a -> b, then b -> a until the state says done, then b -> c."""
    return Workflow("w", steps=[Step("a"), Step("b"), Step("c")], transitions=[
        Transition("b", "c", when=lambda ctx: ctx.state.get("done")),
        Transition("a", "b"), Transition("b", "a")])


def test_a_step_left_that_the_history_still_holds_before_stays_completed():
    x, instance = started(looping())
    for _ in range(3):
        x.next(instance)
    assert x.snapshot(instance).history == ("a", "b", "a", "b")

    x.back(instance)

    snapshot = x.snapshot(instance)
    assert (snapshot.current_step, snapshot.history) == ("a", ("a", "b", "a"))
    assert snapshot.completed_steps == ("b",)  # its first visit was completed
