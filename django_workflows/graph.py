"""A definition as a graph: its steps (nodes) and transitions (edges).

The renderers (SVG for the admin, Mermaid and DOT for ``workflows_graph``)
build on :func:`graph_of`; the API returns it as JSON.
"""

from __future__ import annotations

from typing import Any

from .engine import Workflow


def graph_of(definition: Workflow) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}`` in declaration order; the first node starts."""
    nodes = []
    for index, step in enumerate(definition.steps):
        nested = step.nested.id if isinstance(step.nested, Workflow) else step.nested
        nodes.append({
            "id": step.id, "title": step.title, "initial": index == 0,
            "advance": step.advance, "conditional": step.when is not None,
            "operations": [op.id for op in step.operations],
            "parallel": [branch.id for branch in step.parallel],
            "nested": nested, "timeout": step.timeout,
        })
    edges = [{"source": t.source, "target": t.target, "guarded": t.when is not None}
             for t in definition.transitions]
    return {"nodes": nodes, "edges": edges}
