"""A definition drawn as inline SVG: no script, no network, every text escaped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import escape

from ..engine import Workflow
from .geometry import CHAR_WIDTH, LINE_HEIGHT, MARGIN, layout
from .model import MARKS, details_of, graph_of

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
        label = f"{route.source} → {route.target}" + (
            f" (when {route.label})" if route.label and route.guarded
            else f" ({route.label})" if route.label
            else " (conditional)" if route.guarded else "")
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
        tooltip = f"{node['title']} ({name})" + (f": {mark}" if mark else "")
        tooltip += f" — {details}" if details else ""
        cx = box.x + box.width / 2
        # The title and the lines of details, centred in the box together.
        block = 14 + LINE_HEIGHT * len(box.details)
        top = box.y + (height - block) / 2
        out.append(
            f'<g class="dwf-step{" dwf-step--" + mark if mark else ""}" '
            f'data-step="{_attr(name)}" data-mark="{mark or ""}">'
            f"<title>{escape(tooltip)}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
            f'height="{height:.0f}" rx="8" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{stroke_width}"' + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>"
            f'<text class="dwf-step-title" x="{cx:.1f}" y="{top + 11:.1f}" '
            f'text-anchor="middle" fill="{text}" font-weight="600"'
            + (' text-decoration="line-through"' if mark == "skipped" else "") + ">"
            f"{escape(_clip(node['title'], box.width))}</text>"
            + "".join(
                f'<text class="dwf-step-details" x="{cx:.1f}" '
                f'y="{top + 14 + LINE_HEIGHT * (index + 1) - 3:.1f}" text-anchor="middle" '
                f'fill="{text}" font-size="10">{escape(line)}</text>'
                for index, line in enumerate(box.details))
            + "</g>")
    out.append("</svg>")
    return "".join(out)
