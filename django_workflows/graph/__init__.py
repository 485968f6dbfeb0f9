"""A definition as a graph: its steps (nodes) and transitions (edges).

:func:`graph_of` gives the graph as JSON (the API returns it); the renderers
draw it: :func:`to_svg` (inline in the admin, no script, no network),
:func:`to_mermaid` and :func:`to_dot` (for ``workflows_graph``). Each takes
optional ``marks``: step id -> ``"completed"``, ``"skipped"``, ``"current"``,
``"waiting"`` (current, and waiting for a signal or a timer) or ``"failed"``, drawn
differently; a step that waits says what for in its details. :func:`layout` places
the boxes and lines the SVG draws.
"""

from __future__ import annotations

from .geometry import Box, Layout, Route, layout
from .model import MARKS, details_of, edge_label, graph_of, marks_for
from .svg import to_svg
from .text import to_dot, to_mermaid

__all__ = ["MARKS", "Box", "Layout", "Route", "details_of", "edge_label", "graph_of", "layout",
           "marks_for", "to_dot", "to_mermaid", "to_svg"]
