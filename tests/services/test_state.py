"""States: the schema's errors name the field, non-JSON is refused, the size is limited.

The ``wizard`` schema: ``email`` a string of at most 200 characters, ``plan``
one of null/"free"/"pro", ``age`` an integer >= 0.
"""

from __future__ import annotations

import datetime
import json

import pytest
from django.test import override_settings

from django_workflows import services
from django_workflows.exceptions import InvalidState, StateTooLarge
from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.factories import WorkflowInstanceFactory

pytestmark = pytest.mark.django_db

LIMIT = 200


def limited(limit: int = LIMIT) -> override_settings:
    return override_settings(DJANGO_WORKFLOWS={"MAX_STATE_BYTES": limit})


def json_size(state: dict) -> int:
    return len(json.dumps(state, separators=(",", ":")).encode())


def state_of_size(size: int) -> dict:
    """A state valid for the wizard whose compact JSON is exactly ``size`` bytes."""
    base = {"email": "", "plan": None}
    return {"email": "x" * (size - json_size(base)), "plan": None}


def fields(error: InvalidState) -> list[str]:
    return [problem.field for problem in error.field_errors]


def unchanged(instance: WorkflowInstance) -> tuple:
    row = WorkflowInstance.objects.get(pk=instance.pk)
    return (row.state, row.revision, row.status,
            WorkflowEvent.objects.filter(instance=row).count())


# -- the schema -----------------------------------------------------------------------------


def test_create_with_a_state_breaking_the_schema_names_the_field():
    with pytest.raises(InvalidState) as caught:
        services.create("wizard", state={"email": "a@b.com", "age": -1})

    assert fields(caught.value) == ["age"]
    assert caught.value.code == "invalid_state"
    assert "age" in str(caught.value)


def test_create_names_every_bad_field():
    with pytest.raises(InvalidState) as caught:
        services.create("wizard", state={"email": 5, "plan": "gold", "age": "old"})

    assert fields(caught.value) == ["age", "email", "plan"]


def test_create_with_a_state_breaking_the_schema_stores_nothing():
    with pytest.raises(InvalidState):
        services.create("wizard", state={"age": -1})

    assert not WorkflowInstance.objects.exists()


def test_create_with_a_state_that_is_not_an_object_is_refused():
    with pytest.raises(InvalidState, match="must be a JSON object"):
        services.create("wizard", state=["email"])

    assert not WorkflowInstance.objects.exists()


def test_update_state_breaking_the_schema_names_the_field_and_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = unchanged(instance)

    with pytest.raises(InvalidState) as caught:
        services.update_state(instance, {"email": "x" * 201})

    assert fields(caught.value) == ["email"]
    assert unchanged(instance) == before


def test_update_state_with_a_function_breaking_the_schema_changes_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = unchanged(instance)

    with pytest.raises(InvalidState) as caught:
        services.update_state(instance, lambda state: {**state, "plan": "gold"})

    assert fields(caught.value) == ["plan"]
    assert unchanged(instance) == before


def test_the_refusal_of_update_state_carries_the_unchanged_instance():
    instance = WorkflowInstanceFactory(started=True)

    with pytest.raises(InvalidState) as caught:
        services.update_state(instance, {"age": -1})

    assert caught.value.instance.pk == instance.pk
    assert caught.value.instance.state == {"email": "", "plan": None}


# -- JSON -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [datetime.date(2024, 1, 1), {1, 2}, float("nan")],
                         ids=["date", "set", "nan"])
def test_create_with_a_state_that_is_not_json_is_refused(value):
    with pytest.raises(InvalidState, match="not JSON"):
        services.create("wizard", state={"email": "a@b.com", "extra": value})

    assert not WorkflowInstance.objects.exists()


@pytest.mark.parametrize("value", [datetime.date(2024, 1, 1), {1, 2}, float("inf")],
                         ids=["date", "set", "inf"])
def test_update_state_with_a_value_that_is_not_json_is_refused(value):
    instance = WorkflowInstanceFactory(started=True)
    before = unchanged(instance)

    with pytest.raises(InvalidState, match="not JSON"):
        services.update_state(instance, {"email": "a@b.com", "extra": value})

    assert unchanged(instance) == before


def test_update_state_with_a_function_returning_non_json_is_refused():
    instance = WorkflowInstanceFactory(started=True)
    before = unchanged(instance)

    with pytest.raises(InvalidState, match="not JSON"):
        services.update_state(instance, lambda state: {**state, "when": datetime.date.today()})

    assert unchanged(instance) == before


# -- the size limit -------------------------------------------------------------------------


def test_create_with_a_state_over_the_limit_raises_state_too_large():
    state = state_of_size(LIMIT + 1)

    with limited(), pytest.raises(StateTooLarge) as caught:
        services.create("wizard", state=state)

    assert str(caught.value) == (f"The state is {LIMIT + 1} bytes of JSON; "
                                 f"the limit is {LIMIT} bytes")
    assert (caught.value.code, caught.value.limit) == ("state_too_large", LIMIT)


def test_create_with_a_state_over_the_limit_stores_nothing():
    with limited(), pytest.raises(StateTooLarge):
        services.create("wizard", state=state_of_size(LIMIT + 1))

    assert not WorkflowInstance.objects.exists()


def test_create_with_a_state_of_exactly_the_limit_is_stored():
    with limited():
        instance = services.create("wizard", state=state_of_size(LIMIT))

    assert WorkflowInstance.objects.get(pk=instance.pk).state == state_of_size(LIMIT)


def test_update_state_with_a_value_over_the_limit_stores_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = unchanged(instance)

    with limited(), pytest.raises(StateTooLarge, match=f"the limit is {LIMIT} bytes"):
        services.update_state(instance, state_of_size(LIMIT + 1))

    assert unchanged(instance) == before


def test_update_state_with_a_function_over_the_limit_stores_nothing():
    instance = WorkflowInstanceFactory(started=True)
    before = unchanged(instance)

    with limited(), pytest.raises(StateTooLarge, match=f"the limit is {LIMIT} bytes"):
        services.update_state(instance, lambda state: state_of_size(LIMIT + 1))

    assert unchanged(instance) == before


def test_update_state_within_the_limit_is_stored():
    instance = WorkflowInstanceFactory(started=True)

    with limited():
        services.update_state(instance, state_of_size(LIMIT))

    assert WorkflowInstance.objects.get(pk=instance.pk).state == state_of_size(LIMIT)


def test_the_default_limit_is_256_kib():
    with override_settings(DJANGO_WORKFLOWS={}), pytest.raises(StateTooLarge) as caught:
        services.create("wizard", state=state_of_size(256 * 1024 + 1))

    assert caught.value.limit == 256 * 1024


def test_the_size_counts_bytes_of_utf8_json_not_escapes():
    # "é" is 2 bytes in UTF-8 (it would be 6 as an ASCII escape).
    state = {"email": "é" * 40}
    size = len('{"email":""}') + 80
    with override_settings(DJANGO_WORKFLOWS={"MAX_STATE_BYTES": size}):
        instance = services.create("wizard", state=state)
        assert instance.state == state
        with pytest.raises(StateTooLarge, match=f"{size + 2} bytes"):
            services.update_state(instance, {"email": "é" * 41})
