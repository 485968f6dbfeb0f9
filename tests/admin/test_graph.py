"""Diagrams of definitions: the layered SVG the admin inlines, Mermaid and DOT."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from django_workflows import Operation, Step, Transition, Workflow
from django_workflows.graph import layout, marks_for, to_dot, to_mermaid, to_svg


def _noop(ctx):
    return None


def chain(*ids: str, **options) -> Workflow:
    return Workflow(id=options.pop("id", "chain"), steps=[Step(i) for i in ids],
                    transitions=[Transition(a, b) for a, b in pairwise(ids)],
                    **options)


def step_marks(svg: str) -> dict[str, str]:
    return dict(re.findall(r'data-step="([^"]+)" data-mark="([^"]*)"', svg))


def rect_of(svg: str, step: str) -> str:
    return re.search(rf'data-step="{step}".*?(<rect [^>]+>)', svg).group(1)


def test_svg_is_one_standalone_svg_element():
    svg = to_svg(chain("a", "b"))

    assert svg.startswith("<svg ") and svg.endswith("</svg>")
    assert svg.count("<svg") == 1


def test_svg_needs_no_script_and_no_network():
    svg = to_svg(chain("a", "b", "c"))

    assert "<script" not in svg
    assert re.findall(r"https?://[^\"']+", svg) == ["http://www.w3.org/2000/svg"]
    assert "href" not in svg


def test_svg_draws_a_box_per_step_and_a_line_per_transition():
    svg = to_svg(chain("a", "b", "c"))

    assert list(step_marks(svg)) == ["a", "b", "c"]
    assert re.findall(r'class="dwf-edge" data-source="(\w)" data-target="(\w)"', svg) == [
        ("a", "b"), ("b", "c")]


def test_svg_draws_each_mark_differently():
    svg = to_svg(chain("a", "b", "c", "d", "e"), {"a": "completed", "b": "skipped",
                                                 "c": "current", "d": "failed"})

    assert step_marks(svg) == {"a": "completed", "b": "skipped", "c": "current", "d": "failed",
                               "e": ""}
    looks = {step: rect_of(svg, step) for step in "abcde"}
    assert len(set(looks.values())) == 5
    assert 'fill="#f8d7da"' in looks["d"] and 'stroke="#ba2121"' in looks["d"]
    assert "stroke-dasharray" in looks["b"]


def test_svg_refuses_an_unknown_mark():
    with pytest.raises(ValueError, match="Unknown marks"):
        to_svg(chain("a"), {"a": "exploded"})


def test_svg_escapes_titles():
    definition = Workflow(id="x", title='<Orders & "co">',
                          steps=[Step("a", title="<script>alert(1)</script> & co")])

    svg = to_svg(definition)

    assert "<script>" not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in svg


def test_svg_of_a_definition_without_steps_says_so():
    assert "No steps" in to_svg(Workflow(id="empty"))


def test_svg_names_a_steps_work_under_its_title():
    definition = Workflow(id="w", steps=[
        Step("pay", advance="auto", timeout=30,
             operations=[Operation("charge", run=_noop), Operation("mail", run=_noop)])])

    assert "auto · 2 operations · timeout 30s" in to_svg(definition)


def test_svg_draws_conditional_transitions_dashed():
    definition = Workflow(id="w", steps=[Step("a"), Step("b"), Step("c")],
                          transitions=[Transition("a", "b", when=_noop), Transition("b", "c")])

    svg = to_svg(definition)

    edges = re.findall(r'<path class="dwf-edge" data-source="(\w)"([^>]*)>', svg)
    assert [(source, "stroke-dasharray" in attrs) for source, attrs in edges] == [
        ("a", True), ("b", False)]


def is_rejected(ctx):
    return False


def branching(**options) -> Workflow:
    """review -> rejected (conditional), review -> approved."""
    return Workflow(id="w", steps=[Step("review"), Step("rejected"), Step("approved")],
                    transitions=[Transition("review", "rejected", **options),
                                 Transition("review", "approved")])


def edge_labels(svg: str) -> dict[tuple[str, str], str]:
    return {(source, target): text for source, target, text in re.findall(
        r'<text class="dwf-edge-label" data-source="(\w+)" data-target="(\w+)"[^>]*>([^<]*)</text>',
        svg)}


def test_svg_writes_a_transitions_label_on_its_line():
    svg = to_svg(branching(when=is_rejected, label="rejected by the operator"))

    assert edge_labels(svg) == {("review", "rejected"): "rejected by the operator"}


def test_svg_writes_the_guards_name_on_a_conditional_line_without_a_label():
    assert edge_labels(to_svg(branching(when=is_rejected))) == {
        ("review", "rejected"): "is_rejected"}


def test_svg_writes_nothing_on_the_line_of_an_anonymous_guard():
    svg = to_svg(branching(when=lambda ctx: False))

    assert edge_labels(svg) == {} and "lambda" not in svg


def test_svg_writes_the_label_of_a_transition_back_up_along_its_lane():
    definition = Workflow(id="w", steps=[Step("a"), Step("b")],
                          transitions=[Transition("a", "b"),
                                       Transition("b", "a", when=is_rejected, label="again")])

    svg = to_svg(definition)

    assert edge_labels(svg) == {("b", "a"): "again"}
    assert re.search(r'class="dwf-edge-label" data-source="b"[^>]*transform="rotate\(-90', svg)


def test_mermaid_and_dot_carry_the_label_or_the_guards_name():
    labelled, named = branching(when=is_rejected, label="no"), branching(when=is_rejected)

    assert '    s0 -.->|"no"| s1\n' in to_mermaid(labelled)
    assert '    s0 -.->|"is_rejected"| s1\n' in to_mermaid(named)
    assert '"review" -> "rejected" [style=dashed, label="no"];' in to_dot(labelled)
    assert '"review" -> "rejected" [style=dashed, label="is_rejected"];' in to_dot(named)


def test_svg_wraps_long_details_inside_the_box_and_grows_every_box_alike():
    definition = Workflow(id="w", steps=[
        Step("pay", advance="auto", timeout=30, when=_noop,
             operations=[Operation("charge", run=_noop), Operation("mail", run=_noop)],
             nested="identity-check-with-a-long-name"),
        Step("done")], transitions=[Transition("pay", "done")])

    plan = layout(definition)
    box = plan.boxes["pay"]

    assert len(box.details) > 1  # wrapped, not cut
    assert " · ".join(box.details) == ("auto · conditional · 2 operations · "
                                       "nested: identity-check-with-a-long-name · timeout 30s")
    assert all(len(line) * 6.0 <= box.width - 16 for line in box.details)
    assert plan.node_height > 44
    assert {b.width for b in plan.boxes.values()} == {box.width}


def test_svg_ids_are_unique_per_definition():
    assert 'id="dwf-orders-v2-arrow"' in to_svg(chain("a", id="orders.v2"))


def test_layout_puts_each_step_a_layer_below_the_one_before():
    boxes = layout(chain("a", "b", "c")).boxes

    assert [boxes[s].layer for s in "abc"] == [0, 1, 2]
    assert boxes["a"].y < boxes["b"].y < boxes["c"].y


def test_layout_puts_alternatives_side_by_side():
    definition = Workflow(id="w", steps=[Step("a"), Step("yes"), Step("no"), Step("end")],
                          transitions=[Transition("a", "yes", when=_noop), Transition("a", "no"),
                                       Transition("yes", "end"), Transition("no", "end")])

    boxes = layout(definition).boxes

    assert boxes["yes"].layer == boxes["no"].layer == 1
    assert boxes["yes"].y == boxes["no"].y and boxes["yes"].x != boxes["no"].x
    assert boxes["end"].layer == 2


def test_layout_places_a_step_below_its_longest_way_in():
    definition = Workflow(id="w", steps=[Step("a"), Step("b"), Step("c")],
                          transitions=[Transition("a", "b"), Transition("b", "c"),
                                       Transition("a", "c", when=_noop)])

    plan = layout(definition)

    assert plan.boxes["c"].layer == 2
    long_line = next(r for r in plan.routes if (r.source, r.target) == ("a", "c"))
    assert len(long_line.points) == 4  # passes layer 1 beside "b", not through it
    assert long_line.points[1][0] != plan.boxes["b"].center


def test_layout_routes_a_transition_back_up_on_the_right():
    definition = Workflow(id="w", steps=[Step("a"), Step("b")],
                          transitions=[Transition("a", "b"), Transition("b", "a", when=_noop)])

    plan = layout(definition)

    back = next(r for r in plan.routes if r.back)
    assert (back.source, back.target) == ("b", "a")
    assert max(x for x, _ in back.points) > max(b.x + b.width for b in plan.boxes.values())
    assert plan.boxes["a"].layer == 0 and plan.boxes["b"].layer == 1


def test_layout_of_a_step_that_loops_to_itself():
    definition = Workflow(id="w", steps=[Step("poll")], transitions=[Transition("poll", "poll")])

    plan = layout(definition)

    assert [r.back for r in plan.routes] == [True]


def test_marks_for_an_instance_mark_where_it_stands():
    assert marks_for(status="running", current_step="c", completed_steps=["a"],
                     skipped_steps=["b"]) == {"a": "completed", "b": "skipped", "c": "current"}


def test_marks_for_a_failed_instance_mark_its_step_failed():
    assert marks_for(status="failed", current_step="b", completed_steps=["a"]) == {
        "a": "completed", "b": "failed"}


def test_marks_for_a_completed_instance_mark_no_step_current():
    # A completed instance keeps its last step as current_step.
    assert marks_for(status="completed", current_step="review",
                     completed_steps=["document", "review"]) == {
        "document": "completed", "review": "completed"}


def test_mermaid_is_a_flowchart_of_steps_and_transitions():
    definition = Workflow(id="w", steps=[Step("a", title='Say "hi"'), Step("b")],
                          transitions=[Transition("a", "b", when=lambda ctx: True)])

    assert to_mermaid(definition) == (
        "flowchart TD\n"
        '    s0["Say #quot;hi#quot;"]\n'
        '    s1["b"]\n'
        "    s0 -. when .-> s1\n")


def test_mermaid_marks_steps_with_classes():
    text = to_mermaid(chain("a", "b"), {"a": "completed", "b": "failed"})

    assert "classDef completed fill:#dff0d8" in text and "class s0 completed" in text
    assert "class s1 failed" in text


def test_dot_is_a_digraph_of_steps_and_transitions():
    definition = Workflow(id="w", title="W", steps=[Step("a"), Step("b")],
                          transitions=[Transition("a", "b", when=lambda ctx: True)])

    text = to_dot(definition)

    assert text.startswith('digraph "w" {')
    assert '"a" [label="a"];' in text
    assert '"a" -> "b" [style=dashed, label="when"];' in text
    assert text.rstrip().endswith("}")


def test_dot_marks_steps_with_colours():
    text = to_dot(chain("a", "b"), {"b": "current"})

    assert '"b" [label="b", fillcolor="#e7f1fb", color="#205067", penwidth=2];' in text
