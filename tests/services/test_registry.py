"""The registry: definitions by id, found in apps' ``workflows.py`` or registered by hand.

The modules of ``tests/testapp/broken/`` are imported only here and in the
check tests, through ``registry.autodiscover("broken.<name>")``.
"""

from __future__ import annotations

import importlib

import pytest

from django_workflows import Step, Workflow, register, registry
from django_workflows.engine import DefinitionError
from tests.testapp import workflows as testapp

TESTAPP_IDS = ["wizard", "long-manual", "failing-hook", "back-office", "child-check", "parent"]


@pytest.fixture(autouse=True)
def restore_registry():
    """Put the registry back as the app's start-up left it."""
    definitions = dict(registry._definitions)
    origins = dict(registry._origins)
    errors = list(registry.discovery_errors)
    yield
    for workflow_id in [key for key in registry._definitions if key not in definitions]:
        registry.unregister(workflow_id)
    registry._definitions.update(definitions)
    registry._origins.update(origins)
    registry.discovery_errors[:] = errors


# -- autodiscovery --------------------------------------------------------------------------


@pytest.mark.parametrize("workflow_id", TESTAPP_IDS)
def test_autodiscovery_registered_the_testapp_definitions(workflow_id):
    definition = registry.get(workflow_id)

    assert definition in vars(testapp).values()
    assert registry.origin_of(workflow_id) == "tests.testapp.workflows"


def test_the_testapp_started_without_discovery_errors():
    assert [module for module, _error in registry.discovery_errors
            if module.startswith("tests.testapp.workflows")] == []


def test_a_nested_definition_is_registered_by_its_id():
    registry.autodiscover("broken.sound")

    inner = registry.get("broken-sound-inner")

    assert inner is registry.get("broken-sound").steps_by_id["nest"].nested
    assert registry.origin_of("broken-sound-inner") == (
        'tests.testapp.broken.sound (nested in step "nest")')


def test_the_nested_definition_of_the_testapp_parent_is_the_registered_child():
    assert registry.get("parent").steps_by_id["check"].nested is registry.get("child-check")


def test_autodiscovery_records_the_origin_module():
    registry.autodiscover("broken.sound")

    assert registry.origin_of("broken-sound") == "tests.testapp.broken.sound"


def test_a_broken_module_is_recorded_instead_of_crashing_start_up():
    registry.autodiscover("broken.unknown_step")

    (error,) = [e for m, e in registry.discovery_errors
                if m == "tests.testapp.broken.unknown_step"]
    assert isinstance(error, DefinitionError)
    assert 'unknown step "nowhere"' in str(error)
    assert registry.find("broken-unknown-step") is None


def test_autodiscovering_twice_records_an_error_once():
    registry.autodiscover("broken.unknown_step")
    registry.autodiscover("broken.unknown_step")

    assert [m for m, _e in registry.discovery_errors
            if m == "tests.testapp.broken.unknown_step"] == ["tests.testapp.broken.unknown_step"]


# -- registering by hand --------------------------------------------------------------------


def test_register_makes_a_definition_findable_by_id():
    definition = Workflow(id="by-hand", steps=[Step("one")])

    assert register(definition) is definition

    assert registry.get("by-hand") is definition
    assert registry.find("by-hand") is definition


def test_a_second_definition_with_an_existing_id_names_both_modules():
    duplicate = importlib.import_module("tests.testapp.broken.duplicate_id").wizard

    with pytest.raises(DefinitionError) as caught:
        register(duplicate)

    assert str(caught.value) == ('Workflow id "wizard" is defined twice: in '
                                 "tests.testapp.workflows and in "
                                 "tests.testapp.broken.duplicate_id")
    assert caught.value.kind == "duplicate_id"


def test_a_refused_duplicate_leaves_the_first_definition_registered():
    duplicate = importlib.import_module("tests.testapp.broken.duplicate_id").wizard

    with pytest.raises(DefinitionError):
        register(duplicate)

    assert registry.get("wizard") is testapp.wizard
    assert registry.origin_of("wizard") == "tests.testapp.workflows"


def test_a_duplicate_found_by_autodiscovery_is_recorded_with_its_module():
    registry.autodiscover("broken.duplicate_id")

    assert [(m, e.kind) for m, e in registry.discovery_errors
            if m == "tests.testapp.broken.duplicate_id"] == [
        ("tests.testapp.broken.duplicate_id", "duplicate_id")]
    assert registry.get("wizard") is testapp.wizard


def test_a_definition_whose_nested_id_is_taken_is_not_registered():
    other_wizard = Workflow(id="wizard", steps=[Step("other")])
    outer = Workflow(id="outer", steps=[Step("nest", nested=other_wizard)])

    with pytest.raises(DefinitionError, match='Workflow id "wizard" is defined twice'):
        register(outer)

    assert registry.find("outer") is None
    assert registry.get("wizard") is testapp.wizard


def test_registering_the_same_object_again_is_fine():
    assert register(testapp.wizard) is testapp.wizard

    assert registry.get("wizard") is testapp.wizard
    assert registry.origin_of("wizard") == "tests.testapp.workflows"


def test_register_refuses_what_is_not_a_workflow():
    with pytest.raises(DefinitionError, match="register\\(\\) takes a Workflow"):
        register({"id": "dict"})


def test_get_of_an_unknown_id_raises_key_error():
    with pytest.raises(KeyError, match='No workflow "nope" is registered'):
        registry.get("nope")


def test_find_of_an_unknown_id_is_none():
    assert registry.find("nope") is None


def test_unregister_forgets_the_definition():
    register(Workflow(id="by-hand", steps=[Step("one")]))

    registry.unregister("by-hand")

    assert registry.find("by-hand") is None
    assert registry.origin_of("by-hand") is None


def test_all_definitions_lists_the_registered_ones():
    ids = {definition.id for definition in registry.all_definitions()}

    assert set(TESTAPP_IDS) <= ids
