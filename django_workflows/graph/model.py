"""A definition as a graph: its steps (nodes) and transitions (edges), and an instance's marks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..engine import Transition, Workflow

# "waiting": the current step, waiting for a signal or a timer.
MARKS = ("completed", "skipped", "current", "waiting", "failed")


def edge_label(transition: Transition) -> str | None:
    """The words on a transition's arrow: its ``label``, else its guard's name (a lambda has
    none)."""
    if transition.label:
        return transition.label
    name = getattr(transition.when, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else None


def graph_of(definition: Workflow) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}`` in declaration order; the first node starts."""
    nodes = []
    for index, step in enumerate(definition.steps):
        nested = step.nested.id if isinstance(step.nested, Workflow) else step.nested
        nodes.append({
            "id": step.id, "title": step.title, "initial": index == 0,
            "advance": step.advance, "conditional": step.when is not None,
            "operations": [op.id for op in step.operations],
            "parallel": [branch.id for branch in step.branches],
            "nested": nested, "timeout": step.timeout,
            "wait": None if step.wait is None else {
                "kind": step.wait.kind, "name": getattr(step.wait, "name", None)},
        })
    edges = [{"source": t.source, "target": t.target, "guarded": t.when is not None}
             for t in definition.transitions]
    return {"nodes": nodes, "edges": edges}


def marks_for(*, status: str, current_step: str | None, completed_steps: Iterable[str] = (),
              skipped_steps: Iterable[str] = ()) -> dict[str, str]:
    """The marks of an instance: where it stands, as the diagrams draw it."""
    marks = {step: "skipped" for step in skipped_steps}
    marks.update({step: "completed" for step in completed_steps})
    # A completed instance keeps its last step as current_step, but nothing is current there.
    if current_step and status != "completed":
        marks[current_step] = "failed" if status == "failed" else "current"
    return marks


def wait_label(node: Mapping[str, Any]) -> str | None:
    """What a step waits for, in a few words: ``⏳ signal payment-confirmed``, ``⏱ timer``."""
    wait = node.get("wait")
    if not wait:
        return None
    if wait["kind"] == "signal":
        return f"⏳ signal {wait['name']}"
    return f"⏱ {wait['kind']}"


def details_of(node: Mapping[str, Any]) -> str:
    """A step's kind in a few words: ``auto · 2 operations · nested: child``."""
    parts = []
    waits = wait_label(node)
    if waits:
        parts.append(waits)
    if node["advance"] == "auto":
        parts.append("auto")
    if node["conditional"]:
        parts.append("conditional")
    if node["operations"]:
        count = len(node["operations"])
        parts.append(f"{count} operation{'s' if count != 1 else ''}")
    if node["parallel"]:
        count = len(node["parallel"])
        parts.append(f"{count} branch{'es' if count != 1 else ''}")
    if node["nested"]:
        parts.append(f"nested: {node['nested']}")
    if node["timeout"]:
        parts.append(f"timeout {node['timeout']:g}s")
    return " · ".join(parts)
