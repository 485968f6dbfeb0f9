"""Where each step box and transition line of a diagram goes, top to bottom.

Layers by longest path (edges that close a cycle set aside and drawn up a lane
on the right), order within a layer by barycenters, then coordinates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
TITLE_CHARS = 30  # the widest line of a title a box grows for; longer titles wrap
TITLE_LINES = 3  # at most; a title longer still is clipped (the box's tooltip has it whole)
TITLE_HEIGHT = 14  # each further line of a title
DETAIL_CHARS = 40  # the widest line of details a box grows for; longer ones wrap
CHIP_HEIGHT = 16  # a parallel branch's chip, or a count's badge, in a row of them
CHIP_GAP = 5
ROW_GAP = 8  # between rows of chips (room for a fork's and a join's bar)


@dataclass
class Chip:
    """A small rounded label in a box: a parallel branch, or how many instances are there."""

    text: str
    width: float
    kind: str = "branch"  # branch, or a status (running, failed...) for a count
    x: float = 0.0  # left, from the box's left
    undone: bool = False  # a branch with a compensation
    title: str = ""


@dataclass
class Box:
    id: str
    layer: int
    width: float
    dummy: bool = False
    details: list[str] = field(default_factory=list)  # lines under the title
    title_lines: list[str] = field(default_factory=list)
    branches: list[list[Chip]] = field(default_factory=list)  # rows of chips
    badges: list[list[Chip]] = field(default_factory=list)  # rows of counts
    x: float = 0.0  # left
    y: float = 0.0  # top

    @property
    def center(self) -> float:
        return self.x + self.width / 2


def content_height(box: Box) -> float:
    """The height of what a box holds: its title's lines, its details, its rows of chips."""
    rows = len(box.branches) + len(box.badges)
    return (14 + TITLE_HEIGHT * max(len(box.title_lines) - 1, 0) + LINE_HEIGHT * len(box.details)
            + (CHIP_HEIGHT + ROW_GAP) * rows)


def box_height(box: Box) -> float:
    return max(NODE_HEIGHT + LINE_HEIGHT * max(len(box.details) - 1, 0),
               content_height(box) + 20)


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


def wrap_title(title: str, most: int = TITLE_CHARS) -> list[str]:
    """A title in lines of at most ``most`` characters, broken between words (a word longer
    than a line is cut), at most ``TITLE_LINES`` of them (the last ends with … if more)."""
    lines: list[str] = []
    for word in title.split() or [""]:
        while len(word) > most:  # a word longer than a line: broken where it must be
            if lines and not lines[-1]:
                lines.pop()
            lines.append(word[:most])
            word = word[most:]
        if lines and len(lines[-1]) + 1 + len(word) <= most:
            lines[-1] += " " + word
        else:
            lines.append(word)
    if len(lines) > TITLE_LINES:
        last = " ".join(lines[TITLE_LINES - 1:])
        lines = [*lines[: TITLE_LINES - 1], last[: most - 1] + "…"]
    return lines


def chip_rows(chips: Sequence[Chip], width: float) -> list[list[Chip]]:
    """Chips in rows that fit ``width``, each row centred in it."""
    rows: list[list[Chip]] = []
    used = 0.0
    for chip in chips:
        if rows and used + CHIP_GAP + chip.width <= width - 16:
            rows[-1].append(chip)
            used += CHIP_GAP + chip.width
        else:
            rows.append([chip])
            used = chip.width
    for row in rows:
        x = (width - sum(c.width for c in row) - CHIP_GAP * (len(row) - 1)) / 2
        for chip in row:
            chip.x, x = x, x + chip.width + CHIP_GAP
    return rows


def chip(text: str, kind: str = "branch", *, undone: bool = False, title: str = "") -> Chip:
    return Chip(text, len(text) * DETAIL_CHAR_WIDTH + (22 if undone else 12), kind,
                undone=undone, title=title)


def _branch_chips(definition: Workflow, step_id: str) -> list[Chip]:
    step = definition.steps_by_id[step_id]
    return [chip(branch.id, undone=branch.compensate is not None,
                 title=f"parallel branch {branch.id}" + (
                     ", compensated on rollback" if branch.compensate is not None else ""))
            for branch in step.branches]


def _barycenter(name: str, neighbours: dict[str, list[str]], position: dict[str, int]
                ) -> float:
    near = neighbours[name]
    return sum(position[o] for o in near) / len(near) if near else position[name]


def layout(definition: Workflow,
           badges: Mapping[str, Sequence[tuple[str, str, str]]] | None = None) -> Layout:
    """Where every step box and every transition line goes, top to bottom.

    ``badges``: step id -> ``(kind, text, title)`` chips to draw in its box under its work
    (how many instances are there, by status: the workflow's page).
    """
    badges = badges or {}
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

    title_lines = {node: wrap_title(title) for node, title in titles.items()}
    branch_chips = {node: _branch_chips(definition, node) for node in order}
    badge_chips = {node: [chip(text, kind, title=title)
                          for kind, text, title in badges.get(node, ())] for node in order}
    width = max([140.0, *(len(line) * CHAR_WIDTH + 28
                          for lines in title_lines.values() for line in lines),
                 *(min(len(part), DETAIL_CHARS) * DETAIL_CHAR_WIDTH + 24
                   for parts in details.values() for part in parts),
                 *(c.width + 24 for chips in (*branch_chips.values(), *badge_chips.values())
                   for c in chips)])
    boxes = {node: Box(node, layer[node], width, details=wrap_details(details[node], width),
                       title_lines=title_lines[node],
                       branches=chip_rows(branch_chips[node], width),
                       badges=chip_rows(badge_chips[node], width))
             for node in order}
    # Every box is as tall as the tallest (title, details, branches, counts): the layers
    # stay even.
    node_height = max([box_height(box) for box in boxes.values()] or [NODE_HEIGHT])
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
