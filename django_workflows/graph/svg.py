"""A definition drawn as inline SVG: no script, no network, every text escaped.

A step's box holds its title (wrapped, never cut short but past three lines), what kind
of step it is, its parallel branches side by side between a fork and a join, a ↶ when
rollback undoes something of it, and, on the workflow's page, how many instances are
there now by status (``badges``, each box a link with ``links``). A line is dashed when
it may not be taken: its transition has a guard, or the step it leads to has ``when``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from ..engine import Workflow
from .geometry import (
    CHAR_WIDTH,
    CHIP_HEIGHT,
    LINE_HEIGHT,
    MARGIN,
    ROW_GAP,
    TITLE_HEIGHT,
    Box,
    Chip,
    content_height,
    layout,
)
from .model import MARKS, details_of, graph_of

STYLES = {  # mark -> (fill, stroke, stroke width, dash, text colour)
    None: ("#ffffff", "#79aec8", 1.5, "", "#333333"),
    "completed": ("#dff0d8", "#3c763d", 2, "", "#1e4620"),
    "skipped": ("#f3f3f3", "#999999", 1.5, "5 3", "#777777"),
    "current": ("#e7f1fb", "#205067", 3, "", "#0c3c5a"),
    "waiting": ("#efe9fb", "#6b46c1", 3, "", "#3f2a7a"),  # current, waiting for the outside
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


BADGES = {  # a count's status -> (fill, text)
    "running": ("#2b6cb0", "#ffffff"), "blocked": ("#c05621", "#ffffff"),
    "failed": ("#ba2121", "#ffffff"), "paused": ("#b7791f", "#ffffff"),
    "rolling-back": ("#805ad5", "#ffffff"), "idle": ("#8a8a8a", "#ffffff"),
    "completed": ("#2f7d32", "#ffffff"), "cancelled": ("#4a4a4a", "#ffffff"),
}


def conditional_steps(definition: Workflow) -> set[str]:
    """The steps that apply only when their ``when`` says so: a line into one may not be
    followed through it."""
    return {step.id for step in definition.steps if step.when is not None}


def undone_on_rollback(definition: Workflow, step_id: str) -> list[str]:
    """What a rollback undoes of a step, in words (nothing: an empty list)."""
    step = definition.steps_by_id[step_id]
    found = [f"rollback of the operation {op.id}" for op in step.operations
             if op.rollback is not None]
    found += [f"compensation of the branch {b.id}" for b in step.branches
              if b.compensate is not None]
    if step.compensate is not None:
        found.append("the step's compensate")
    return found


def _chips(rows: list[list[Chip]], box: Box, top: float, text: str, *, branches: bool
           ) -> list[str]:
    out = []
    for index, row in enumerate(rows):
        y = top + index * (CHIP_HEIGHT + ROW_GAP)
        if branches:  # a fork's bar above the row and a join's below it, as UML draws them
            left = box.x + row[0].x - 3
            right = box.x + row[-1].x + row[-1].width + 3
            for edge in (y - 4, y + CHIP_HEIGHT + 4):
                out.append(f'<line class="dwf-fork" x1="{left:.1f}" y1="{edge:.1f}" '
                           f'x2="{right:.1f}" y2="{edge:.1f}" stroke="{text}" '
                           'stroke-width="2"/>')
        for item in row:
            x = box.x + item.x
            fill, ink = BADGES.get(item.kind, ("#ffffff", text))
            stroke = text if branches else fill
            label = ("↶ " if item.undone else "") + item.text
            out.append(
                f'<g class="{"dwf-branch-chip" if branches else "dwf-count"}" '
                f'data-kind="{_attr(item.kind)}"><title>{escape(item.title or item.text)}'
                f'</title><rect x="{x:.1f}" y="{y:.1f}" width="{item.width:.1f}" '
                f'height="{CHIP_HEIGHT}" rx="{CHIP_HEIGHT / 2 if not branches else 3}" '
                f'fill="{fill}" stroke="{stroke}"/>'
                f'<text x="{x + item.width / 2:.1f}" y="{y + 11.5:.1f}" text-anchor="middle" '
                f'font-size="10" fill="{ink}">{escape(label)}</text></g>')
    return out


def to_svg(definition: Workflow, marks: Mapping[str, str] | None = None, *,
           id_prefix: str | None = None,
           badges: Mapping[str, Sequence[tuple[str, str, str]]] | None = None,
           links: Mapping[str, str] | None = None) -> str:
    """The definition as a standalone ``<svg>`` element (inline styles, no script).

    ``badges``: step id -> ``(status, text, title)`` counts drawn in its box; ``links``:
    step id -> the URL its box opens.
    """
    marks = marks or {}
    links = links or {}
    unknown = set(marks.values()) - set(MARKS)
    if unknown:
        raise ValueError(f"Unknown marks {sorted(unknown)}; expected {', '.join(MARKS)}")
    prefix = id_prefix or "dwf-" + re.sub(r"[^A-Za-z0-9_-]", "-", definition.id)
    plan = layout(definition, badges)
    nodes = {node["id"]: node for node in graph_of(definition)["nodes"]}
    conditional = conditional_steps(definition)
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
        into_conditional = route.target in conditional
        dashed = route.guarded or into_conditional
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        label = f"{route.source} → {route.target}" + (
            f" (when {route.label})" if route.label and route.guarded
            else f" ({route.label})" if route.label
            else " (conditional)" if route.guarded else "")
        if into_conditional:
            label += f"; {route.target} applies only when its condition holds"
        out.append(
            f'<path class="dwf-edge" data-source="{_attr(route.source)}" '
            f'data-target="{_attr(route.target)}" d="{_path(route.points, route.back)}" '
            f'fill="none" stroke="#666666" stroke-width="1.4"{dash} '
            f'marker-end="url(#{prefix}-arrow)"><title>{escape(label)}</title></path>')
    for route in plan.routes:  # after every line, so that no line crosses a label
        if route.label:
            x, y = route.label_at
            turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if route.back else ""
            out.append(
                f'<text class="dwf-edge-label" data-source="{_attr(route.source)}" '
                f'data-target="{_attr(route.target)}" x="{x:.1f}" y="{y + 3.5:.1f}"{turn} '
                'text-anchor="middle" font-size="10" font-style="italic" fill="#444444" '
                'stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                f"{escape(route.label)}</text>")
    height = plan.node_height
    for name, box in plan.boxes.items():
        node, mark = nodes[name], marks.get(name)
        fill, stroke, stroke_width, dash, text = STYLES[mark]
        details = details_of(node)
        undone = undone_on_rollback(definition, name)
        tooltip = f"{node['title']} ({name})" + (f": {mark}" if mark else "")
        tooltip += f" — {details}" if details else ""
        tooltip += f"; on rollback: {', '.join(undone)}" if undone else ""
        cx = box.x + box.width / 2
        # The title, the details and the rows of chips, centred in the box together.
        top = box.y + (height - content_height(box)) / 2
        lines_top = top + TITLE_HEIGHT * (len(box.title_lines) - 1)
        chips_top = lines_top + 14 + LINE_HEIGHT * len(box.details) + ROW_GAP
        link = links.get(name)
        out.append(
            (f'<a class="dwf-step-link" href="{_attr(link)}">' if link else "")
            + f'<g class="dwf-step{" dwf-step--" + mark if mark else ""}" '
            f'data-step="{_attr(name)}" data-mark="{mark or ""}">'
            f"<title>{escape(tooltip)}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
            f'height="{height:.0f}" rx="8" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{stroke_width}"' + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>"
            + "".join(
                f'<text class="dwf-step-title" x="{cx:.1f}" '
                f'y="{top + 11 + TITLE_HEIGHT * index:.1f}" text-anchor="middle" '
                f'fill="{text}" font-weight="600"'
                + (' text-decoration="line-through"' if mark == "skipped" else "") + ">"
                f"{escape(_clip(line, box.width))}</text>"
                for index, line in enumerate(box.title_lines))
            + "".join(
                f'<text class="dwf-step-details" x="{cx:.1f}" '
                f'y="{lines_top + 14 + LINE_HEIGHT * (index + 1) - 3:.1f}" '
                f'text-anchor="middle" fill="{text}" font-size="10">{escape(line)}</text>'
                for index, line in enumerate(box.details))
            + "".join(_chips(box.branches, box, chips_top, text, branches=True))
            + "".join(_chips(box.badges, box, chips_top + (CHIP_HEIGHT + ROW_GAP)
                             * len(box.branches), text, branches=False))
            + (f'<text class="dwf-step-undo" x="{box.x + box.width - 8:.1f}" '
               f'y="{box.y + 13:.1f}" text-anchor="end" font-size="12" fill="{text}">'
               f"<title>{escape('On rollback: ' + ', '.join(undone))}</title>↶</text>"
               if undone else "")
            + "</g>" + ("</a>" if link else ""))
    out.append("</svg>")
    return "".join(out)
