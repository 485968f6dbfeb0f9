"""``workflows_graph <id> [--format svg|mermaid|dot] [--instance <uuid>]``."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_workflows import registry
from django_workflows.graph import to_dot, to_mermaid, to_svg
from tests.factories import WorkflowInstanceFactory


def graph(*args) -> str:
    out = StringIO()
    call_command("workflows_graph", *args, stdout=out)
    return out.getvalue()


def test_prints_the_admins_svg_by_default():
    assert graph("wizard") == to_svg(registry.get("wizard")) + "\n"


def test_prints_mermaid():
    assert graph("wizard", "--format", "mermaid") == to_mermaid(registry.get("wizard"))


def test_prints_dot():
    assert graph("wizard", "--format", "dot") == to_dot(registry.get("wizard"))


def test_unknown_workflow_is_an_error_naming_the_known_ones():
    with pytest.raises(CommandError, match=r'No workflow "nope" is registered \(registered: .*'
                                           r"wizard"):
        graph("nope")


def test_unknown_format_is_an_error():
    with pytest.raises(CommandError, match="invalid choice"):
        graph("wizard", "--format", "png")


@pytest.mark.django_db
def test_marks_the_steps_of_an_instance():
    instance = WorkflowInstanceFactory(state={"email": "ann@example.org", "plan": None},
                                       started=True, commands=["next"])

    text = graph("wizard", "--format", "mermaid", "--instance", str(instance.pk))

    assert "class s0 completed" in text and "class s1 skipped" in text
    assert "class s2 current" in text


@pytest.mark.django_db
def test_an_unknown_instance_is_an_error():
    with pytest.raises(CommandError, match="No workflow instance"):
        graph("wizard", "--instance", str(uuid.uuid4()))


@pytest.mark.django_db
def test_an_instance_of_another_workflow_is_an_error():
    instance = WorkflowInstanceFactory(workflow="admin-undo")

    with pytest.raises(CommandError, match="is a 'admin-undo' instance, not 'wizard'"):
        graph("wizard", "--instance", str(instance.pk))
