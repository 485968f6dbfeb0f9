"""A definition as text for other tools: a Mermaid flowchart or a Graphviz digraph."""

from __future__ import annotations

from collections.abc import Mapping

from ..engine import Workflow
from .model import details_of, edge_label, graph_of
from .svg import STYLES

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
    for edge, transition in zip(graph["edges"], definition.transitions, strict=True):
        label = edge_label(transition)
        if label:
            arrow = (" -.->" if edge["guarded"] else " -->") + f'|"{text_of(label)}"| '
        else:
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
    for edge, transition in zip(graph["edges"], definition.transitions, strict=True):
        label = edge_label(transition) or ("when" if edge["guarded"] else None)
        attrs = [*(["style=dashed"] if edge["guarded"] else []),
                 *([f"label={_dot_string(label)}"] if label else [])]
        extra = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"    {_dot_string(edge['source'])} -> {_dot_string(edge['target'])}{extra};")
    lines.append("}")
    return "\n".join(lines) + "\n"
