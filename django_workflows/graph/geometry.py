"""Where each step box and transition line of a diagram goes, top to bottom.

Layers by longest path (edges that close a cycle set aside and drawn up a lane
on the right), order within a layer by barycenters, then coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise

from ..engine import Workflow
from .model import details_of, edge_label, graph_of

NODE_HEIGHT = 44  # a title and one line of details; each further line adds LINE_HEIGHT
LINE_HEIGHT = 13
LAYER_GAP = 46
NODE_GAP = 36
DUMMY_WIDTH = 12
MARGIN = 16
LANE_GAP = 14
CHAR_WIDTH = 7.0  # average width of a 12px sans-serif character
DETAIL_CHAR_WIDTH = 6.0  # and of a 10px one, as the details under a title are drawn
TITLE_CHARS = 30  # a longer title is clipped (the box's tooltip has it whole)
DETAIL_CHARS = 40  # the widest line of details a box grows for; longer ones wrap


@dataclass
class Box:
    id: str
    layer: int
    width: float
    dummy: bool = False
    details: list[str] = field(default_factory=list)  # lines under the title
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
    label: str | None = None  # words drawn on the line
    label_at: tuple[float, float] = (0.0, 0.0)  # where they are centred


@dataclass
class Layout:
    boxes: dict[str, Box]
    routes: list[Route]
    width: float
    height: float
    node_height: float = NODE_HEIGHT


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


def wrap_details(parts: list[str], width: float) -> list[str]:
    """The parts of a step's details (``auto``, ``2 operations``...) in lines that fit."""
    most = max(int((width - 16) / DETAIL_CHAR_WIDTH), 4)
    lines: list[str] = []
    for part in parts:
        if len(part) > most:
            part = part[: most - 1] + "…"
        if lines and len(lines[-1]) + 3 + len(part) <= most:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def _barycenter(name: str, neighbours: dict[str, list[str]], position: dict[str, int]
                ) -> float:
    near = neighbours[name]
    return sum(position[o] for o in near) / len(near) if near else position[name]


def layout(definition: Workflow) -> Layout:
    """Where every step box and every transition line goes, top to bottom."""
    graph = graph_of(definition)
    order = [node["id"] for node in graph["nodes"]]
    titles = {node["id"]: node["title"] for node in graph["nodes"]}
    details = {node["id"]: [part for part in details_of(node).split(" · ") if part]
               for node in graph["nodes"]}
    edges = [(edge["source"], edge["target"]) for edge in graph["edges"]]
    labels = {(t.source, t.target): edge_label(t) for t in reversed(definition.transitions)}
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

    width = max([140.0, *(min(len(title), TITLE_CHARS) * CHAR_WIDTH + 28
                          for title in titles.values()),
                 *(min(len(part), DETAIL_CHARS) * DETAIL_CHAR_WIDTH + 24
                   for parts in details.values() for part in parts)])
    boxes = {node: Box(node, layer[node], width, details=wrap_details(details[node], width))
             for node in order}
    # Every box is as tall as the one with the most lines of details: the layers stay even.
    lines = max([len(box.details) for box in boxes.values()] or [1])
    node_height = NODE_HEIGHT + LINE_HEIGHT * max(lines - 1, 0)
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
            row.sort(key=partial(_barycenter, neighbours=neighbours, position=position))
            position.update({name: index for index, name in enumerate(row)})

    widest = max([sum(boxes[n].width for n in row) + NODE_GAP * (len(row) - 1)
                  for row in layers] or [0.0])
    top = MARGIN + (LAYER_GAP / 2 if back else 0)  # room for lines back into the first row
    for index, row in enumerate(layers):
        row_width = sum(boxes[n].width for n in row) + NODE_GAP * (len(row) - 1)
        x = MARGIN + (widest - row_width) / 2
        for name in row:
            boxes[name].x, boxes[name].y = x, top + index * (node_height + LAYER_GAP)
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
        points = [(port(chain[0], index, outs, 1), first.y + node_height)]
        for name in chain[1:-1]:  # straight down through each layer it crosses
            points += [(boxes[name].center, boxes[name].y),
                       (boxes[name].center, boxes[name].y + node_height)]
        points.append((port(chain[-1], index, ins, -2), last.y))
        (x0, y0), (x1, y1) = points[0], points[1]  # the label sits in the first gap
        pair = (chain[0], chain[-1])
        routes.append(Route(*pair, guarded[pair], points, label=labels.get(pair),
                            label_at=((x0 + x1) / 2, (y0 + y1) / 2)))
    # A transition back up leaves below its source, runs up a lane on the right and
    # comes into the top of its target; its level runs lie in the gaps between layers.
    lane = MARGIN + widest + LANE_GAP
    for offset, index in enumerate(sorted(back)):
        source, target = edges[index]
        src, dst = boxes[source], boxes[target]
        shift = (offset % 3) * 6
        below = src.y + node_height + LAYER_GAP / 2 - 6 + shift
        above = dst.y - LAYER_GAP / 2 + 6 - shift
        routes.append(Route(source, target, guarded[(source, target)], [
            (src.x + src.width - 12 - shift, src.y + node_height),
            (src.x + src.width - 12 - shift, below), (lane, below), (lane, above),
            (dst.x + dst.width - 12 - shift, above), (dst.x + dst.width - 12 - shift, dst.y),
        ], back=True, label=labels.get((source, target)),
            label_at=(lane, (below + above) / 2)))  # drawn up the lane
        lane += LANE_GAP
    real = {name: box for name, box in boxes.items() if not box.dummy}
    height = (top * 2 + len(layers) * node_height + max(len(layers) - 1, 0) * LAYER_GAP)
    return Layout(real, routes, lane + MARGIN - LANE_GAP if back else MARGIN * 2 + widest,
                  max(height, node_height + MARGIN * 2), node_height)
