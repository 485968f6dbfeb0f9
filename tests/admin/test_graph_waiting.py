"""Diagrams of steps that wait: each says what it waits for, and the step an instance waits
in is drawn as waiting, in the SVG, Mermaid and DOT alike."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest

from django_workflows import Signal, Step, Timer, Transition, Workflow
from django_workflows.graph import graph_of, to_dot, to_mermaid, to_svg

SVG = "{http://www.w3.org/2000/svg}"

shop = Workflow(
    id="shop", title="Shop",
    steps=[Step("cart"),
           Step("await-payment", title="Wait for the bank",
                wait=Signal("payment-confirmed", timeout=timedelta(hours=1))),
           Step("cool-off", wait=Timer(after=timedelta(days=3))),
           Step("ship")],
    transitions=[Transition("cart", "await-payment"), Transition("await-payment", "cool-off"),
                 Transition("cool-off", "ship")],
)


def details(svg: str, step: str) -> list[str]:
    """The lines of details under a step's title, as the SVG draws them."""
    box = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("data-step") == step)
    return [text.text or "" for text in box.iter(f"{SVG}text")
            if text.get("class") == "dwf-step-details"]


def test_the_graph_says_what_each_step_waits_for():
    nodes = {node["id"]: node["wait"] for node in graph_of(shop)["nodes"]}

    assert nodes == {"cart": None, "await-payment": {"kind": "signal",
                                                      "name": "payment-confirmed"},
                     "cool-off": {"kind": "timer", "name": None}, "ship": None}


def test_a_step_that_waits_for_a_signal_is_labelled_with_its_name():
    assert details(to_svg(shop), "await-payment") == ["⏳ signal payment-confirmed"]


def test_a_step_that_waits_for_a_timer_is_labelled_a_timer():
    assert details(to_svg(shop), "cool-off") == ["⏱ timer"]


def test_a_step_that_waits_for_nothing_has_no_such_label():
    svg = to_svg(shop)

    assert details(svg, "cart") == [] and details(svg, "ship") == []


@pytest.mark.parametrize("marks", [None, {"cart": "completed", "await-payment": "waiting"}])
def test_the_svg_of_steps_that_wait_is_well_formed_xml(marks):
    root = ET.fromstring(to_svg(shop, marks))

    assert root.tag == f"{SVG}svg"


def test_the_step_an_instance_waits_in_is_drawn_as_waiting_unlike_a_current_one():
    waiting = to_svg(shop, {"await-payment": "waiting"})
    current = to_svg(shop, {"await-payment": "current"})

    rect = re.search(r'data-step="await-payment".*?(<rect [^>]+>)', waiting).group(1)
    assert 'data-mark="waiting"' in waiting and "dwf-step--waiting" in waiting
    assert 'stroke="#6b46c1"' in rect
    assert rect != re.search(r'data-step="await-payment".*?(<rect [^>]+>)', current).group(1)
    assert "Wait for the bank (await-payment): waiting" in waiting  # its tooltip


def test_mermaid_says_what_a_step_waits_for_and_marks_the_waiting_step():
    text = to_mermaid(shop, {"await-payment": "waiting"})

    assert '    s1["Wait for the bank<br/><small>⏳ signal payment-confirmed</small>"]' in text
    assert '    s2["cool-off<br/><small>⏱ timer</small>"]' in text
    assert "classDef waiting fill:#efe9fb,stroke:#6b46c1" in text
    assert "class s1 waiting" in text


def test_dot_says_what_a_step_waits_for_and_marks_the_waiting_step():
    text = to_dot(shop, {"await-payment": "waiting"})

    assert ('"await-payment" [label="Wait for the bank\\n⏳ signal payment-confirmed", '
            'fillcolor="#efe9fb", color="#6b46c1", penwidth=2];') in text
    assert '"cool-off" [label="cool-off\\n⏱ timer"];' in text


@pytest.mark.needs_api
@pytest.mark.django_db
def test_the_api_gives_each_step_its_wait():
    from rest_framework.test import APIClient

    from tests.factories import UserFactory

    client = APIClient()
    client.force_authenticate(UserFactory())
    body = client.get("/api/workflows/payment/").json()

    waits = {node["id"]: node["wait"] for node in body["graph"]["nodes"]}
    assert waits == {"cart": None, "ship": None,
                     "await-payment": {"kind": "signal", "name": "payment-confirmed"}}
