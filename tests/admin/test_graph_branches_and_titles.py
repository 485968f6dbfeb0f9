"""The diagram draws what issue 24 found missing: parallel branches, what a rollback undoes,
lines into a conditional step dashed, long titles wrapped; and counts on the steps."""

from __future__ import annotations

import re

from django_workflows import Branch, Operation, Step, Transition, Workflow
from django_workflows.graph import layout, to_svg


def _noop(ctx):
    return None


def _undo(result, ctx):
    return None


def step_group(svg: str, step: str) -> str:
    return re.search(rf'<g class="dwf-step[^"]*" data-step="{step}".*?</g>(?=<g class="dwf-step|'
                     r"<a |</svg>)", svg, re.S).group(0)


WELCOME = Workflow(id="w", steps=[
    Step("provision", advance="auto",
         operations=[Operation("create-tenant", run=_noop, rollback=_undo)]),
    Step("welcome", advance="auto", compensate=_noop,
         parallel=[Branch("mail", run=_noop, compensate=_noop), Branch("crm", run=_noop)]),
    Step("done"),
], transitions=[Transition("provision", "welcome"), Transition("welcome", "done")])


def test_a_parallel_steps_branches_are_drawn_side_by_side_between_a_fork_and_a_join():
    welcome = step_group(to_svg(WELCOME), "welcome")

    chips = re.findall(r'<g class="dwf-branch-chip" data-kind="branch"><title>([^<]*)</title>'
                       r".*?<text[^>]*>([^<]*)</text>", welcome)
    assert chips == [("parallel branch mail, compensated on rollback", "↶ mail"),
                     ("parallel branch crm", "crm")]
    assert welcome.count('class="dwf-fork"') == 2  # a bar above, a bar below


def test_what_a_rollback_undoes_is_marked_on_its_step_and_said_on_hover():
    svg = to_svg(WELCOME)

    undo = re.findall(r'data-step="(\w+)".*?<text class="dwf-step-undo"[^>]*><title>([^<]*)'
                      r"</title>↶</text>", svg)
    assert undo == [
        ("provision", "On rollback: rollback of the operation create-tenant"),
        ("welcome", "On rollback: compensation of the branch mail, the step's compensate")]
    assert "dwf-step-undo" not in step_group(svg, "done")


def test_a_line_into_a_step_that_applies_only_when_its_condition_holds_is_dashed():
    plan = Workflow(id="w", steps=[Step("account"), Step("plan", title="Your plan",
                                                          when=lambda ctx: True),
                                   Step("confirm")],
                    transitions=[Transition("account", "plan"),
                                 Transition("plan", "confirm")])

    edges = re.findall(r'<path class="dwf-edge" data-source="(\w+)" data-target="(\w+)"'
                       r"([^>]*)>", to_svg(plan))

    assert [(source, target, "stroke-dasharray" in attrs)
            for source, target, attrs in edges] == [("account", "plan", True),
                                                    ("plan", "confirm", False)]


def test_a_long_title_is_wrapped_whole_inside_its_box():
    title = "Tell us about your company and its registered address please"
    definition = Workflow(id="w", steps=[Step("company", title=title), Step("done")],
                          transitions=[Transition("company", "done")])

    svg = to_svg(definition)
    lines = re.findall(r'<text class="dwf-step-title"[^>]*>([^<]*)</text>',
                       step_group(svg, "company"))
    box = layout(definition).boxes["company"]

    assert lines == ["Tell us about your company and", "its registered address please"]
    assert all(len(line) * 7.0 <= box.width - 16 for line in lines)


def test_a_title_past_three_lines_ends_with_an_ellipsis_and_is_whole_on_hover():
    title = " ".join(["word"] * 40)
    svg = to_svg(Workflow(id="w", steps=[Step("long", title=title)]))

    lines = re.findall(r'<text class="dwf-step-title"[^>]*>([^<]*)</text>', svg)
    assert len(lines) == 3 and lines[-1].endswith("…")
    assert f"<title>{title} (long)" in svg


def test_counts_drawn_on_the_steps_link_each_step_where_asked():
    svg = to_svg(WELCOME, badges={"welcome": [("running", "3 running", "3 running here"),
                                              ("failed", "1 failed", "1 failed here")]},
                 links={"welcome": "/admin/list/?step=welcome"})

    counts = re.findall(r'<g class="dwf-count" data-kind="(\w+)"><title>([^<]*)</title>', svg)
    assert counts == [("running", "3 running here"), ("failed", "1 failed here")]
    assert '<a class="dwf-step-link" href="/admin/list/?step=welcome"><g class="dwf-step" ' \
           'data-step="welcome"' in svg
