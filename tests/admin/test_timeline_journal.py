"""The steps of durable code on the timeline: a small mark on the operation's lane where
each entry of its journal finished, saying which step it was (graph/timeline_events.py,
graph/timeline_svg.py, admin/timeline.py)."""

from __future__ import annotations

import html
import re
from datetime import UTC

import pytest

from django_workflows import services
from django_workflows.graph.timeline import JournalRow, Titles
from django_workflows.graph.timeline_events import timeline_of
from django_workflows.graph.timeline_svg import timeline_svg
from tests.testapp.models import Note

from .conftest import instance_url
from .test_timeline import PAID, T, at, bars, marks


def test_each_entry_is_a_mark_on_its_operation_s_lane_where_it_finished():
    events = [*PAID, at(9, "operation-succeeded", "charge", operation="pay", attempt=1)]
    journal = [JournalRow("pay", 0, "load", "step", T + 2), JournalRow("pay", 1, "charge-1",
                                                                       "step", T + 5, tries=3),
               JournalRow("pay", 2, "sleep", "sleep", T + 7),
               JournalRow("pay", 3, "paid", "signal", T + 8)]

    timeline = timeline_of(events, now=T + 10, titles=Titles(operations={"pay": "Payment"}),
                           journal=journal)

    assert marks(timeline, "operation:pay") == [
        (2, "journal", 'step "load" (#0) done'),
        (5, "journal", 'step "charge-1" (#1) done, 3 tries'),
        (7, "journal", "sleep (#2) ended"),
        (8, "journal", 'wait for the signal "paid" (#3) ended')]
    assert bars(timeline, "operation:pay") == [(0, 1, "queued", "#1 queued"),
                                               (1, 9, "succeeded", "#1")]  # as before


def test_an_entry_after_the_end_of_a_finished_timeline_is_left_out():
    timeline = timeline_of([at(0, "start"), at(0, "step-enter", "a"), at(4, "complete", "a")],
                           now=T + 100, status="completed", finished_at=T + 4,
                           journal=[JournalRow("pay", 0, "late", "step", T + 50)])

    assert [lane.key for lane in timeline.lanes] == ["steps"]


def test_the_drawing_marks_an_entry_with_a_tick_that_says_its_step():
    timeline = timeline_of(PAID, now=T + 3, journal=[JournalRow("pay", 0, "<load>", "step",
                                                                T + 2)])

    svg = timeline_svg(timeline, tz=UTC)

    mark = re.search(r'<g class="dwf-tl-mark" data-kind="journal"><title>([^<]*)</title>'
                     r'<rect [^>]*width="2" height="10"', svg)
    assert mark is not None
    assert html.unescape(mark.group(1)).split("\n")[0] == 'step "<load>" (#0) done'


@pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit
def test_the_page_draws_the_steps_of_a_quote_on_its_lane(root_client):
    Note.objects.create(text="rate 0")
    instance = services.create("durable-quote", start=True)

    content = root_client.get(instance_url(instance)).content.decode()

    lane = re.search(r'<g class="dwf-tl-lane" data-lane="operation:quote".*?</g></g>', content,
                     re.S)
    assert lane is not None
    said = [html.unescape(title).split("\n")[0] for title in re.findall(
        r'data-kind="journal"><title>([^<]*)</title>', content)]
    assert said == ['step "load" (#0) done', 'step "rate" (#1) done']
