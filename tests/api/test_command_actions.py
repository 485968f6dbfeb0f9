"""The API's command actions are made once, with their viewset's class, from the declared
commands; asking the router for URLs changes no class (``api/commands.py``)."""

from __future__ import annotations

import pytest

from django_workflows import engine
from django_workflows.api.commands import CommandBody
from django_workflows.api.tasks import TaskViewSet
from django_workflows.api.urls import api_urlpatterns
from django_workflows.api.views import InstanceViewSet
from tests.declared_commands import declared

pytestmark = pytest.mark.needs_api


def viewset_of(urls: list, name: str) -> type:
    """The viewset class the URL named ``name`` calls."""
    return next(url.callback.cls for url in urls if getattr(url, "name", None) == name)


def test_each_viewset_has_a_method_for_each_of_its_commands_from_import():
    for viewset, commands in ((InstanceViewSet, engine.ACTIONS),
                              (TaskViewSet, engine.TASK_COMMANDS)):
        for name, command in commands.items():
            made = vars(viewset)[name]
            assert (made.__name__, made.url_path, made.mapping) == (
                name, name, {"post": name}), name
            assert made.__doc__ == command.summary


def test_building_the_urls_changes_no_viewset():
    before = {viewset: dict(vars(viewset)) for viewset in (InstanceViewSet, TaskViewSet)}

    with declared():
        urls = api_urlpatterns()
        InstanceViewSet.get_extra_actions()

    assert {viewset: dict(vars(viewset)) for viewset in before} == before
    assert "note" not in {made.__name__ for made in InstanceViewSet.get_extra_actions()}
    assert viewset_of(urls, "task-detail") is TaskViewSet  # its commands did not change


def test_a_command_declared_after_import_is_an_action_of_a_subclass_made_with_the_urls():
    with declared():
        made = viewset_of(api_urlpatterns(), "instance-detail")

    assert made is not InstanceViewSet and issubclass(made, InstanceViewSet)
    assert made.__name__ == "InstanceViewSet" and made.__doc__ == InstanceViewSet.__doc__
    assert {"note", "hold_operation"} <= {action.__name__
                                          for action in made.get_extra_actions()}
    assert viewset_of(api_urlpatterns(), "instance-detail") is InstanceViewSet


def test_a_command_s_body_takes_what_it_declares_but_what_the_url_gives():
    assert list(CommandBody(engine.Rewind).fields) == ["step"]
    assert list(CommandBody(engine.Complete, given_by_url=("task",)).fields) == ["input"]
    assert CommandBody(engine.SkipOperation).component_name == "SkipOperationBody"
    assert not CommandBody(engine.Next).fields
