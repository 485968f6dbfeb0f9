"""A definition as a graph: its steps (nodes) and transitions (edges).

:func:`graph_of` gives the graph as JSON (the API returns it); the renderers
draw it: :func:`to_svg` (inline in the admin, no script, no network),
:func:`to_mermaid` and :func:`to_dot` (for ``workflows_graph``). Each takes
optional ``marks``: step id -> ``"completed"``, ``"skipped"``, ``"current"``
or ``"failed"``, drawn differently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any
from xml.sax.saxutils import escape

from .engine import Workflow

MARKS = ("completed", "skipped", "current", "failed")


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


def marks_for(*, status: str, current_step: str | None, completed_steps: Iterable[str] = (),
              skipped_steps: Iterable[str] = ()) -> dict[str, str]:
    """The marks of an instance: where it stands, as the diagrams draw it."""
    marks = {step: "skipped" for step in skipped_steps}
    marks.update({step: "completed" for step in completed_steps})
    if current_step:
        marks[current_step] = "failed" if status == "failed" else "current"
    return marks


def details_of(node: Mapping[str, Any]) -> str:
    """A step's kind in a few words: ``auto · 2 operations · nested: child``."""
    parts = []
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


# -- layout: layers (longest path, back edges set aside), order (barycenters), coordinates --

NODE_HEIGHT = 44
LAYER_GAP = 46
NODE_GAP = 36
DUMMY_WIDTH = 12
MARGIN = 16
LANE_GAP = 14
CHAR_WIDTH = 7.0  # average width of a 12px sans-serif character


@dataclass
class Box:
    id: str
    layer: int
    width: float
    dummy: bool = False
    x: float = 0.0  # left
    y: float = 0.0  # top

    @property
    def center(self) -> float:
        return self.x + self.width / 2


@dataclass
class Route:
    source: str
    target: str
    guarded: bool
    points: list[tuple[float, float]] = field(default_factory=list)
    back: bool = False


@dataclass
class Layout:
    boxes: dict[str, Box]
    routes: list[Route]
    width: float
    height: float


def _back_edges(order: list[str], edges: list[tuple[str, str]]) -> set[int]:
    """Indexes of edges that close a cycle (found by a depth-first walk from the first step)."""
    successors: dict[str, list[tuple[int, str]]] = {node: [] for node in order}
    for index, (source, target) in enumerate(edges):
        successors[source].append((index, target))
    back: set[int] = set()
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    for root in order:
        if root in state:
            continue
        stack = [(root, iter(successors[root]))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            for index, child in children:
                if state.get(child) == 1:
                    back.add(index)
                elif child not in state:
                    state[child] = 1
                    stack.append((child, iter(successors[child])))
                    break
            else:
                state[node] = 2
                stack.pop()
    return back


def _barycenter(name: str, neighbours: dict[str, list[str]], position: dict[str, int]
                ) -> float:
    near = neighbours[name]
    return sum(position[o] for o in near) / len(near) if near else position[name]


def layout(definition: Workflow) -> Layout:
    """Where every step box and every transition line goes, top to bottom."""
    graph = graph_of(definition)
    order = [node["id"] for node in graph["nodes"]]
    titles = {node["id"]: node["title"] for node in graph["nodes"]}
    edges = [(edge["source"], edge["target"]) for edge in graph["edges"]]
    back = _back_edges(order, edges)
    forward = [edge for index, edge in enumerate(edges) if index not in back]

    layer = dict.fromkeys(order, 0)
    for _ in order:  # longest path over an acyclic graph settles within len(order) rounds
        changed = False
        for source, target in forward:
            if layer[target] < layer[source] + 1:
                layer[target], changed = layer[source] + 1, True
        if not changed:
            break

    width = max([140.0, *(min(len(title), 30) * CHAR_WIDTH + 28 for title in titles.values())])
    boxes = {node: Box(node, layer[node], width) for node in order}
    # A transition that spans layers passes through a dummy box on each layer in between.
    chains: list[list[str]] = []
    for index, (source, target) in enumerate(forward):
        chain = [source]
        for between in range(layer[source] + 1, layer[target]):
            name = f"\0{index}:{between}"
            boxes[name] = Box(name, between, DUMMY_WIDTH, dummy=True)
            chain.append(name)
        chains.append([*chain, target])

    layers: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for name, box in boxes.items():
        layers[box.layer].append(name)
    ups: dict[str, list[str]] = {name: [] for name in boxes}
    downs: dict[str, list[str]] = {name: [] for name in boxes}
    for chain in chains:
        for upper, lower in pairwise(chain):
            downs[upper].append(lower)
            ups[lower].append(upper)
    position = {name: index for row in layers for index, name in enumerate(row)}
    for sweep in range(4):  # barycenter ordering: fewer crossings
        rows = layers[1:] if sweep % 2 == 0 else list(reversed(layers[:-1]))
        neighbours = ups if sweep % 2 == 0 else downs
        for row in rows:
            row.sort(key=lambda name, near=neighbours: _barycenter(name, near, position))
            position.update({name: index for index, name in enumerate(row)})

    widest = max([sum(boxes[n].width for n in row) + NODE_GAP * (len(row) - 1)
                  for row in layers] or [0.0])
    top = MARGIN + (LAYER_GAP / 2 if back else 0)  # room for lines back into the first row
    for index, row in enumerate(layers):
        row_width = sum(boxes[n].width for n in row) + NODE_GAP * (len(row) - 1)
        x = MARGIN + (widest - row_width) / 2
        for name in row:
            boxes[name].x, boxes[name].y = x, top + index * (NODE_HEIGHT + LAYER_GAP)
            x += boxes[name].width + NODE_GAP

    routes = []
    guarded = {(e["source"], e["target"]): e["guarded"] for e in graph["edges"]}
    # Spread the ends of a box's lines along its edge, in the order of where they lead.
    outs: dict[str, list[int]] = {}
    ins: dict[str, list[int]] = {}
    for index, chain in enumerate(chains):
        outs.setdefault(chain[0], []).append(index)
        ins.setdefault(chain[-1], []).append(index)

    def port(name: str, index: int, ends: dict[str, list[int]], toward: int) -> float:
        members = sorted(ends[name], key=lambda i: (boxes[chains[i][toward]].center, i))
        box = boxes[name]
        return box.x + box.width * (members.index(index) + 1) / (len(members) + 1)

    for index, chain in enumerate(chains):
        first, last = boxes[chain[0]], boxes[chain[-1]]
        points = [(port(chain[0], index, outs, 1), first.y + NODE_HEIGHT)]
        for name in chain[1:-1]:  # straight down through each layer it crosses
            points += [(boxes[name].center, boxes[name].y),
                       (boxes[name].center, boxes[name].y + NODE_HEIGHT)]
        points.append((port(chain[-1], index, ins, -2), last.y))
        routes.append(Route(chain[0], chain[-1], guarded[(chain[0], chain[-1])], points))
    # A transition back up leaves below its source, runs up a lane on the right and
    # comes into the top of its target; its level runs lie in the gaps between layers.
    lane = MARGIN + widest + LANE_GAP
    for offset, index in enumerate(sorted(back)):
        source, target = edges[index]
        src, dst = boxes[source], boxes[target]
        shift = (offset % 3) * 6
        below = src.y + NODE_HEIGHT + LAYER_GAP / 2 - 6 + shift
        above = dst.y - LAYER_GAP / 2 + 6 - shift
        routes.append(Route(source, target, guarded[(source, target)], [
            (src.x + src.width - 12 - shift, src.y + NODE_HEIGHT),
            (src.x + src.width - 12 - shift, below), (lane, below), (lane, above),
            (dst.x + dst.width - 12 - shift, above), (dst.x + dst.width - 12 - shift, dst.y),
        ], back=True))
        lane += LANE_GAP
    real = {name: box for name, box in boxes.items() if not box.dummy}
    height = (top * 2 + len(layers) * NODE_HEIGHT + max(len(layers) - 1, 0) * LAYER_GAP)
    return Layout(real, routes, lane + MARGIN - LANE_GAP if back else MARGIN * 2 + widest,
                  max(height, NODE_HEIGHT + MARGIN * 2))


# -- SVG ---------------------------------------------------------------------------------

STYLES = {  # mark -> (fill, stroke, stroke width, dash, text colour)
    None: ("#ffffff", "#79aec8", 1.5, "", "#333333"),
    "completed": ("#dff0d8", "#3c763d", 2, "", "#1e4620"),
    "skipped": ("#f3f3f3", "#999999", 1.5, "5 3", "#777777"),
    "current": ("#e7f1fb", "#205067", 3, "", "#0c3c5a"),
    "failed": ("#f8d7da", "#ba2121", 3, "", "#7a1010"),
}


def _attr(value: Any) -> str:
    return escape(str(value), {'"': "&quot;"})


def _clip(text: str, width: float) -> str:
    most = max(int((width - 16) / CHAR_WIDTH), 4)
    return text if len(text) <= most else text[: most - 1] + "…"


def _path(points: list[tuple[float, float]], back: bool) -> str:
    if back:  # out to the right-hand lane, up, and back in: square corners read fine
        return "M " + " L ".join(f"{x:.1f} {y:.1f}" for x, y in points)
    (x0, y0), rest = points[0], points[1:]
    parts = [f"M {x0:.1f} {y0:.1f}"]
    for x1, y1 in rest:
        if abs(x1 - x0) < 0.5:
            parts.append(f"L {x1:.1f} {y1:.1f}")
        else:
            middle = (y0 + y1) / 2
            parts.append(f"C {x0:.1f} {middle:.1f} {x1:.1f} {middle:.1f} {x1:.1f} {y1:.1f}")
        x0, y0 = x1, y1
    return " ".join(parts)


def to_svg(definition: Workflow, marks: Mapping[str, str] | None = None, *,
           id_prefix: str | None = None) -> str:
    """The definition as a standalone ``<svg>`` element (inline styles, no script)."""
    marks = marks or {}
    unknown = set(marks.values()) - set(MARKS)
    if unknown:
        raise ValueError(f"Unknown marks {sorted(unknown)}; expected {', '.join(MARKS)}")
    prefix = id_prefix or "dwf-" + re.sub(r"[^A-Za-z0-9_-]", "-", definition.id)
    plan = layout(definition)
    nodes = {node["id"]: node for node in graph_of(definition)["nodes"]}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="dwf-diagram" '
        f'width="{plan.width:.0f}" height="{plan.height:.0f}" '
        f'viewBox="0 0 {plan.width:.0f} {plan.height:.0f}" role="img" '
        f'aria-label="{_attr("Diagram of " + (definition.title or definition.id))}" '
        f'font-family="-apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">',
        f"<title>{escape(definition.title or definition.id)}</title>",
        f'<defs><marker id="{prefix}-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#666666"/></marker></defs>',
    ]
    if not nodes:
        out.append(f'<text x="{MARGIN}" y="{MARGIN + 16}" fill="#777777">No steps</text>')
    for route in plan.routes:
        dash = ' stroke-dasharray="6 4"' if route.guarded else ""
        label = f"{route.source} → {route.target}" + (" (conditional)" if route.guarded else "")
        out.append(
            f'<path class="dwf-edge" data-source="{_attr(route.source)}" '
            f'data-target="{_attr(route.target)}" d="{_path(route.points, route.back)}" '
            f'fill="none" stroke="#666666" stroke-width="1.4"{dash} '
            f'marker-end="url(#{prefix}-arrow)"><title>{escape(label)}</title></path>')
    for name, box in plan.boxes.items():
        node, mark = nodes[name], marks.get(name)
        fill, stroke, stroke_width, dash, text = STYLES[mark]
        details = details_of(node)
        tooltip = f"{node['title']} ({name})" + (f": {mark}" if mark else "")
        tooltip += f" — {details}" if details else ""
        cx = box.x + box.width / 2
        out.append(
            f'<g class="dwf-step{" dwf-step--" + mark if mark else ""}" '
            f'data-step="{_attr(name)}" data-mark="{mark or ""}">'
            f"<title>{escape(tooltip)}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
            f'height="{NODE_HEIGHT}" rx="8" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{stroke_width}"' + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>"
            f'<text x="{cx:.1f}" y="{box.y + (18 if details else 26):.1f}" '
            f'text-anchor="middle" fill="{text}" font-weight="600"'
            + (' text-decoration="line-through"' if mark == "skipped" else "") + ">"
            f"{escape(_clip(node['title'], box.width))}</text>"
            + (f'<text x="{cx:.1f}" y="{box.y + 34:.1f}" text-anchor="middle" '
               f'fill="{text}" font-size="10">{escape(_clip(details, box.width * 1.15))}</text>'
               if details else "")
            + "</g>")
    out.append("</svg>")
    return "".join(out)


# -- Mermaid and DOT ---------------------------------------------------------------------

COLOURS = {mark: (fill, stroke) for mark, (fill, stroke, *_rest) in STYLES.items() if mark}


def to_mermaid(definition: Workflow, marks: Mapping[str, str] | None = None) -> str:
    """A Mermaid ``flowchart``; conditional transitions are dotted."""
    marks = marks or {}
    graph = graph_of(definition)
    names = {node["id"]: f"s{index}" for index, node in enumerate(graph["nodes"])}

    def text_of(value: str) -> str:
        return value.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")

    lines = ["flowchart TD"]
    for node in graph["nodes"]:
        details = details_of(node)
        text = text_of(node["title"]) + (f"<br/><small>{text_of(details)}</small>"
                                         if details else "")
        lines.append(f'    {names[node["id"]]}["{text}"]')
    for edge in graph["edges"]:
        arrow = " -. when .-> " if edge["guarded"] else " --> "
        lines.append(f"    {names[edge['source']]}{arrow}{names[edge['target']]}")
    used = sorted({mark for step, mark in marks.items() if step in names})
    for mark in used:
        fill, stroke = COLOURS[mark]
        lines.append(f"    classDef {mark} fill:{fill},stroke:{stroke},stroke-width:2px")
        members = ",".join(names[step] for step, m in marks.items() if m == mark and step in names)
        lines.append(f"    class {members} {mark}")
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(definition: Workflow, marks: Mapping[str, str] | None = None) -> str:
    """A Graphviz ``digraph``; conditional transitions are dashed."""
    marks = marks or {}
    graph = graph_of(definition)
    lines = [
        f"digraph {_dot_string(definition.id)} {{",
        f"    label={_dot_string(definition.title or definition.id)};",
        "    rankdir=TB;",
        '    node [shape=box, style="rounded,filled", fillcolor="#ffffff", color="#79aec8", '
        'fontname="Helvetica"];',
        '    edge [color="#666666"];',
    ]
    for node in graph["nodes"]:
        details = details_of(node)
        attrs = [f"label={_dot_string(node['title'] + (chr(10) + details if details else ''))}"]
        mark = marks.get(node["id"])
        if mark:
            fill, stroke = COLOURS[mark]
            attrs += [f'fillcolor="{fill}"', f'color="{stroke}"', "penwidth=2"]
            if mark == "skipped":
                attrs.append('style="rounded,filled,dashed"')
        lines.append(f"    {_dot_string(node['id'])} [{', '.join(attrs)}];")
    for edge in graph["edges"]:
        extra = ' [style=dashed, label="when"]' if edge["guarded"] else ""
        lines.append(f"    {_dot_string(edge['source'])} -> {_dot_string(edge['target'])}{extra};")
    lines.append("}")
    return "\n".join(lines) + "\n"
