"""What the service saves: the instances of a tree that a command changed."""

from __future__ import annotations

from django_workflows.engine import Next, Step, changed_nodes

from .helpers_work import chain, started


def nested_tree():
    child = chain(Step("k1"), Step("k2"), workflow_id="child")
    x, i = started(chain(Step("nest", nested=child), Step("after"), workflow_id="parent"))
    return x, i


def test_a_new_instance_counts_as_changed():
    x, i = nested_tree()

    assert [n.id for n in changed_nodes(None, x.snapshot(i))] == [i, x.snapshot(i).nested.id]


def test_a_command_on_the_child_changes_only_the_child():
    x, i = nested_tree()
    before = x.snapshot(i)

    x.command(before.nested.id, Next())

    assert [n.id for n in changed_nodes(before, x.snapshot(i))] == [before.nested.id]


def test_a_refused_command_changes_nothing():
    x, i = nested_tree()
    before = x.snapshot(i)

    assert not x.start(i).moved

    assert changed_nodes(before, x.snapshot(i)) == []
