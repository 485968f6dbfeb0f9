"""Definitions are checked when they are constructed; a broken one names what is wrong."""

from __future__ import annotations

from datetime import timedelta

import pydantic
import pytest

from django_workflows.engine import (
    Branch,
    DefinitionError,
    InvalidState,
    Operation,
    Step,
    Transition,
    Workflow,
)

from .helpers_navigation import created, wizard


def noop(*args):
    return None


def message_of(build) -> str:
    with pytest.raises(DefinitionError) as raised:
        build()
    return str(raised.value)


# -- transitions ---------------------------------------------------------------

def test_a_transition_from_an_unknown_step_is_refused_naming_the_step():
    message = message_of(lambda: Workflow(
        "w", steps=[Step("a")], transitions=[Transition("ghost", "a")]))

    assert message == 'Workflow "w": transition "ghost" -> "a" names unknown step "ghost"'


def test_a_transition_to_an_unknown_step_is_refused_naming_the_step():
    message = message_of(lambda: Workflow(
        "w", steps=[Step("a")], transitions=[Transition("a", "ghost")]))

    assert message == 'Workflow "w": transition "a" -> "ghost" names unknown step "ghost"'


def test_transitions_must_be_transition_objects():
    message = message_of(lambda: Workflow("w", steps=[Step("a")], transitions=[("a", "a")]))

    assert message.startswith('Workflow "w": transitions must be Transition objects')


# -- ids -----------------------------------------------------------------------

def test_two_steps_with_one_id_are_refused():
    message = message_of(lambda: Workflow("w", steps=[Step("a"), Step("a")]))

    assert message == 'Workflow "w": step id "a" is used twice'


def test_two_operations_with_one_id_in_a_step_are_refused():
    op = Operation("charge", run=noop)

    message = message_of(lambda: Workflow("w", steps=[Step("pay", operations=[op, op])]))

    assert message == 'Workflow "w": step "pay": duplicate operation id "charge"'


def test_two_operations_with_one_id_in_different_steps_are_refused():
    steps = [Step("a", operations=[Operation("sync", run=noop)]),
             Step("b", operations=[Operation("sync", run=noop)])]

    message = message_of(lambda: Workflow("w", steps=steps))

    assert message == 'Workflow "w": step "b": duplicate operation id "sync"'


def test_two_branches_with_one_id_are_refused():
    message = message_of(lambda: Step(
        "welcome", parallel=[Branch("mail", run=noop), Branch("mail", run=noop)]))

    assert message == 'Step "welcome": branch id "mail" is used twice'


@pytest.mark.parametrize("build", [
    lambda: Workflow(""), lambda: Step(""), lambda: Operation("", run=noop),
    lambda: Branch("", run=noop), lambda: Transition("", "a"), lambda: Step(3),
], ids=["workflow", "step", "operation", "branch", "transition", "not-a-string"])
def test_an_empty_or_non_string_id_is_refused(build):
    assert "id must be a non-empty string" in message_of(build)


# -- hooks ---------------------------------------------------------------------

@pytest.mark.parametrize("hook", ["enter", "leave", "validate", "when", "compensate"])
def test_a_non_callable_step_hook_is_refused_naming_the_hook(hook):
    message = message_of(lambda: Step("a", **{hook: "not a function"}))

    assert message == f"Step \"a\": {hook} must be callable, not 'not a function'"


@pytest.mark.parametrize("hook", ["migrate", "exit_guard", "analytics", "on_observer_error",
                                  "permission"])
def test_a_non_callable_workflow_hook_is_refused_naming_the_hook(hook):
    message = message_of(lambda: Workflow("w", **{hook: 42}))

    assert message == f'Workflow "w": {hook} must be callable, not 42'


def test_a_non_callable_transition_guard_is_refused():
    message = message_of(lambda: Transition("a", "b", when=True))

    assert message == 'Transition "a" -> "b": when must be callable, not True'


@pytest.mark.parametrize("build, expected", [
    (lambda: Operation("charge", run="charge()"),
     "Operation \"charge\": run must be callable, not 'charge()'"),
    (lambda: Operation("charge", run=noop, rollback=1),
     'Operation "charge": rollback must be callable, not 1'),
    (lambda: Branch("mail", run=None), 'Branch "mail": run must be callable, not None'),
    (lambda: Branch("mail", run=noop, compensate=[]),
     'Branch "mail": compensate must be callable, not []'),
], ids=["operation-run", "operation-rollback", "branch-run", "branch-compensate"])
def test_non_callable_work_is_refused_naming_it(build, expected):
    assert message_of(build) == expected


# -- times, retries, advance ------------------------------------------------------

@pytest.mark.parametrize("timeout", [-1, "60", True, [60]])
def test_a_step_timeout_that_is_not_a_non_negative_number_is_refused(timeout):
    assert message_of(lambda: Step("a", timeout=timeout)).startswith('Step "a": timeout must')


def test_a_negative_operation_timeout_is_refused():
    message = message_of(lambda: Operation("sync", run=noop, timeout=-0.5))

    assert message == 'Operation "sync": timeout must not be negative, got -0.5'


def test_a_zero_timeout_means_no_limit():
    assert Step("a", timeout=0).timeout is None
    assert Operation("sync", run=noop, timeout=0).timeout is None


def test_times_given_as_timedelta_are_seconds():
    step = Step("a", timeout=timedelta(minutes=2))
    operation = Operation("sync", run=noop, timeout=timedelta(seconds=30),
                          retry_delay=timedelta(milliseconds=500),
                          max_retry_delay=timedelta(hours=1))

    assert step.timeout == 120.0
    assert (operation.timeout, operation.retry_delay, operation.max_retry_delay) == (
        30.0, 0.5, 3600.0)


def test_a_step_timeout_given_as_timedelta_is_reported_in_seconds():
    definition = Workflow("w", steps=[Step(
        "provision", timeout=timedelta(minutes=1),
        operations=[Operation("create-tenant", run=noop)])])
    x, instance = created(definition, autorun=False)
    x.start(instance)

    x.advance(60)

    assert x.snapshot(instance).errors == ('Workflow step "provision" timed out after 60s',)


@pytest.mark.parametrize("retries", [1.5, "3", True])
def test_retries_that_are_not_an_int_are_refused(retries):
    message = message_of(lambda: Operation("sync", run=noop, retries=retries))

    assert message == f'Operation "sync": retries must be an int, not {retries!r}'


def test_negative_retries_mean_a_single_attempt():
    assert Operation("sync", run=noop, retries=-2).max_attempts == 1


def test_a_backoff_below_one_is_refused():
    message = message_of(lambda: Operation("sync", run=noop, backoff=0.5))

    assert message == 'Operation "sync": backoff must be a number >= 1, not 0.5'


def test_an_unknown_advance_is_refused():
    message = message_of(lambda: Step("a", advance="sometimes"))

    assert message == "Step \"a\": advance must be \"manual\" or \"auto\", not 'sometimes'"


@pytest.mark.parametrize("version", [0, -1, "2", True])
def test_a_version_that_is_not_a_positive_int_is_refused(version):
    message = message_of(lambda: Workflow("w", version=version))

    assert message == f'Workflow "w": version must be a positive int, not {version!r}'


# -- the parts of a step ------------------------------------------------------------

def test_steps_must_be_step_objects():
    message = message_of(lambda: Workflow("w", steps=["a"]))

    assert message == "Workflow \"w\": steps must be Step objects, not 'a'"


def test_operations_must_be_operation_objects():
    message = message_of(lambda: Step("a", operations=[noop]))

    assert message.startswith('Step "a": operations must be Operation objects')


def test_parallel_items_must_be_branches_or_callables():
    message = message_of(lambda: Step("a", parallel=["mail"]))

    assert message == "Step \"a\": parallel items must be Branch objects or callables, not 'mail'"


def test_a_nested_workflow_must_be_a_workflow_or_an_id():
    message = message_of(lambda: Step("a", nested=42))

    assert message == 'Step "a": nested must be a Workflow or a workflow id'


def test_bare_callable_branches_get_the_step_id_and_their_index():
    step = Step("welcome", parallel=[noop, Branch("crm", run=noop), noop])

    assert [branch.id for branch in step.parallel] == ["welcome:0", "crm", "welcome:2"]


def test_a_bare_callable_branch_has_no_compensation():
    step = Step("welcome", parallel=[noop])

    assert step.parallel[0].run is noop
    assert step.parallel[0].compensate is None


def test_a_branch_id_that_clashes_with_a_bare_callables_id_is_refused():
    message = message_of(lambda: Step("welcome", parallel=[Branch("welcome:1", run=noop), noop]))

    assert message == 'Step "welcome": branch id "welcome:1" is used twice'


def test_titles_default_to_the_ids():
    definition = Workflow("signup", steps=[Step("account", operations=[
        Operation("create-tenant", run=noop)])])

    assert definition.title == "signup"
    assert definition.steps[0].title == "account"
    assert definition.steps[0].operations[0].title == "create-tenant"


# -- initial state ------------------------------------------------------------------

def test_a_plain_initial_state_is_deep_copied_for_every_instance():
    initial = {"tags": []}
    definition = Workflow("w", initial=initial)

    first = definition.initial_state()
    first["tags"].append("vip")

    assert definition.initial_state() == {"tags": []}
    assert initial == {"tags": []}


def test_instances_never_share_the_initial_state_object():
    definition = wizard("a", initial={"tags": []})
    x, first = created(definition)
    second = x.create("w")

    assert x.snapshot(first).state == {"tags": []}
    assert x.snapshot(first).state is not x.snapshot(second).state
    assert x.snapshot(first).state["tags"] is not x.snapshot(second).state["tags"]


def test_an_initial_state_factory_is_called_for_every_instance():
    calls = []

    def initial():
        calls.append(1)
        return {"number": len(calls)}

    x, first = created(wizard("a", initial=initial))
    second = x.create("w")

    assert x.snapshot(first).state == {"number": 1}
    assert x.snapshot(second).state == {"number": 2}


def test_without_an_initial_state_an_instance_starts_with_an_empty_one():
    x, instance = created(wizard("a"))

    assert x.snapshot(instance).state == {}


def test_an_initial_state_that_is_neither_a_dict_nor_a_factory_is_refused():
    message = message_of(lambda: Workflow("w", initial=["email"]))

    assert message == 'Workflow "w": initial must be a dict or a callable returning one'


# -- state schema ---------------------------------------------------------------------

SIGNUP_SCHEMA = {
    "type": "object",
    "properties": {"email": {"type": "string"}, "seats": {"type": "integer", "minimum": 1}},
    "required": ["email"],
}


class SignupState(pydantic.BaseModel):
    email: str
    seats: int = 1


def test_an_invalid_json_schema_is_refused():
    message = message_of(lambda: Workflow("w", state_schema={"type": "no-such-type"}))

    assert message.startswith('Workflow "w": state_schema is not a valid JSON Schema: ')


def test_a_state_schema_that_is_neither_a_dict_nor_a_model_is_refused():
    message = message_of(lambda: Workflow("w", state_schema="object"))

    assert message == ("Workflow \"w\": state_schema must be a JSON Schema dict or a pydantic "
                       "model, not 'object'")


def test_a_new_instance_state_is_checked_against_the_json_schema():
    x, _ = created(wizard("a", initial={"email": "a@example.com"}, state_schema=SIGNUP_SCHEMA))

    with pytest.raises(InvalidState) as raised:
        x.create("w", {"email": "a@example.com", "seats": 0})

    assert [error.field for error in raised.value.field_errors] == ["seats"]


def test_a_missing_required_field_is_named():
    x, _ = created(wizard("a", initial={"email": ""}, state_schema=SIGNUP_SCHEMA))

    with pytest.raises(InvalidState) as raised:
        x.create("w", {"seats": 2})

    assert [(e.field, e.message) for e in raised.value.field_errors] == [
        ("email", "This field is required.")]


def test_an_initial_state_that_breaks_the_schema_cannot_create_an_instance():
    definition = wizard("a", initial={"seats": 1}, state_schema=SIGNUP_SCHEMA)

    with pytest.raises(InvalidState) as raised:
        created(definition)

    assert [error.field for error in raised.value.field_errors] == ["email"]


def test_a_pydantic_model_is_accepted_as_the_state_schema():
    x, instance = created(wizard("a", initial={"email": "a@example.com"},
                                 state_schema=SignupState))

    assert x.snapshot(instance).state == {"email": "a@example.com"}


def test_a_new_instance_state_is_checked_against_the_pydantic_model():
    x, _ = created(wizard("a", initial={"email": "a@example.com"}, state_schema=SignupState))

    with pytest.raises(InvalidState) as raised:
        x.create("w", {"email": "a@example.com", "seats": "many"})

    assert [error.field for error in raised.value.field_errors] == ["seats"]


def test_a_new_instance_state_must_be_a_json_object():
    x, _ = created(wizard("a"))

    with pytest.raises(InvalidState) as raised:
        x.create("w", ["a", "b"])

    assert str(raised.value) == "The state must be a JSON object"
