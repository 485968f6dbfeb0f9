"""A timeline drawn as inline SVG: time runs left to right, a lane per row; no script.

Long idle gaps are compressed: a gap longer than every other stretch of the history
together (and over a minute) is drawn as a narrow break saying how long it was, so a
claim that waited two days for a manager and a payment that took three seconds are
both readable in one drawing. Hovering a bar or a mark shows its times and outcome
(an SVG ``<title>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from itertools import pairwise
from xml.sax.saxutils import escape

from .timeline import Bar, Lane, Mark, Timeline, span_words

WIDTH = 960
LABEL_WIDTH = 170
RIGHT = 20
AXIS_HEIGHT = 30
ROW_HEIGHT = 24
BAR_HEIGHT = 14
BREAK_WIDTH = 40
MIN_BREAK = 60.0  # seconds: a shorter gap is never compressed
MAX_BREAKS = 8
MAX_LANES = 30
CHAR = 6.2  # the average width of an 11px character

COLOURS = {  # outcome -> (fill, text)
    "completed": ("#3c763d", "#ffffff"), "succeeded": ("#2f7d32", "#ffffff"),
    "done": ("#2f7d32", "#ffffff"), "compensated": ("#5a3e8e", "#ffffff"),
    "current": ("#205067", "#ffffff"), "running": ("#2b6cb0", "#ffffff"),
    "open": ("#2b6cb0", "#ffffff"), "queued": ("#c9d8e6", "#1d3a52"),
    "waiting": ("#6b46c1", "#ffffff"), "arrived": ("#6b46c1", "#ffffff"),
    "fired": ("#6b46c1", "#ffffff"), "paused": ("#b7791f", "#ffffff"),
    "retry-wait": ("#e9e0f8", "#3f2a7a"), "stopping": ("#f6d5c4", "#7a2e10"),
    "failed": ("#ba2121", "#ffffff"), "timed out": ("#c05621", "#ffffff"),
    "interrupted": ("#ba2121", "#ffffff"), "blocked": ("#c05621", "#ffffff"),
    "cancelled": ("#6b6b6b", "#ffffff"), "dropped": ("#b0b0b0", "#333333"),
    "skipped": ("#d9d9d9", "#555555"), "went back": ("#8fa7bd", "#ffffff"),
    "rewound": ("#8fa7bd", "#ffffff"), "left": ("#8fa7bd", "#ffffff"),
    "rolled back": ("#5a3e8e", "#ffffff"), "rolling back": ("#805ad5", "#ffffff"),
}
MARKS = {  # kind -> colour
    "error": "#ba2121", "timeout": "#c05621", "overdue": "#c05621", "skip": "#777777",
    "claim": "#2b6cb0", "start": "#2f7d32", "complete": "#2f7d32", "cancel": "#4a4a4a",
    "retry": "#6b46c1", "rollback": "#5a3e8e", "signal": "#6b46c1", "journal": "#1d3a52",
}


@dataclass(frozen=True)
class Piece:
    start: float  # seconds
    end: float
    left: float  # pixels
    right: float
    is_break: bool = False


class Axis:
    """Time to x: linear between breaks, each break a fixed narrow width."""

    def __init__(self, start: float, end: float, instants: list[float], left: float,
                 right: float) -> None:
        points = sorted({min(max(t, start), end) for t in (start, end, *instants)})
        gaps = [(a, b) for a, b in pairwise(points) if b > a]
        broken: set[tuple[float, float]] = set()
        linear = sum(b - a for a, b in gaps)
        for a, b in sorted(gaps, key=lambda gap: gap[0] - gap[1]):  # longest first
            if len(broken) == MAX_BREAKS or b - a <= max(MIN_BREAK, linear - (b - a)):
                break
            broken.add((a, b))
            linear -= b - a
        room = right - left - BREAK_WIDTH * len(broken)
        scale = room / max(linear, 1e-9) if linear > 0 else 0.0
        self.pieces: list[Piece] = []
        x = left
        for a, b in gaps or [(start, end)]:
            width = BREAK_WIDTH if (a, b) in broken else (b - a) * scale
            self.pieces.append(Piece(a, b, x, x + width, (a, b) in broken))
            x += width
        if not gaps:  # everything at one instant: a single line at the left
            self.pieces = [Piece(start, end, left, left)]
        self.start, self.end, self.left, self.right = start, end, left, right

    def x(self, t: float) -> float:
        for piece in self.pieces:
            if t <= piece.end:
                if t <= piece.start or piece.end == piece.start:
                    return piece.left
                share = (t - piece.start) / (piece.end - piece.start)
                return piece.left + share * (piece.right - piece.left)
        return self.pieces[-1].right

    @property
    def breaks(self) -> list[Piece]:
        return [piece for piece in self.pieces if piece.is_break]


# Tick spacings, seconds: from a hundredth of a second to a week.
STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
         3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


def ticks(axis: Axis) -> list[float]:
    """Round times along the linear pieces, at least 90 pixels apart."""
    found: list[float] = [axis.start]
    for piece in axis.pieces:
        if piece.is_break or piece.right - piece.left < 90:
            if piece.is_break:
                found.append(piece.end)
            continue
        per_pixel = (piece.end - piece.start) / (piece.right - piece.left)
        step = next((s for s in STEPS if s / per_pixel >= 90), STEPS[-1])
        # Within ten minutes the labels count from the start, so the ticks do too.
        origin = axis.start if axis.end - axis.start < 600 else 0.0
        t = origin + ((piece.start - origin) // step + 1) * step
        while t < piece.end:
            found.append(t)
            t += step
    kept: list[float] = []
    for t in sorted(found):
        if not kept or axis.x(t) - axis.x(kept[-1]) >= 70:
            kept.append(t)
    return kept


def _moment(t: float, tz: tzinfo | None, whole: bool = False) -> str:
    local = datetime.fromtimestamp(t, tz)
    return f"{local:%Y-%m-%d %H:%M:%S}" if whole else f"{local:%H:%M:%S}"


def _tick_label(t: float, timeline: Timeline, tz: tzinfo | None) -> str:
    """The first tick's clock time; after it, within ten minutes, the time since it
    (``+2.5 s``), else clock times (with the day when the timeline spans days)."""
    local = datetime.fromtimestamp(t, tz)
    first = datetime.fromtimestamp(timeline.start, tz)
    last = datetime.fromtimestamp(timeline.end, tz)
    if t > timeline.start and timeline.end - timeline.start < 600:
        since = t - timeline.start
        return f"+{since:.2f}".rstrip("0").rstrip(".") + " s" if since < 60 \
            else f"+{span_words(since)}"
    if first.date() != last.date():
        return f"{local.day} {local:%b %H:%M}"
    return f"{local:%H:%M:%S}" if timeline.end - timeline.start < 600 else f"{local:%H:%M}"


def _attr(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


def _clip(text: str, room: float) -> str:
    most = int(room / CHAR)
    if len(text) <= most:
        return text
    return text[: most - 1] + "…" if most > 3 else ""


def bar_title(bar: Bar, timeline: Timeline, tz: tzinfo | None) -> str:
    """What hovering a bar says: its times, how long, and what became of it."""
    end = bar.end if bar.end is not None else timeline.end
    until = _moment(end, tz, whole=True) if bar.end is not None else (
        "now" if timeline.running else _moment(end, tz, whole=True))
    words = f"{_moment(bar.start, tz, whole=True)} to {until} ({span_words(end - bar.start)}" \
            f"{' so far' if bar.end is None and timeline.running else ''})"
    if bar.planned_end is not None:
        words += f"; due {_moment(bar.planned_end, tz, whole=True)}"
    return f"{bar.detail or bar.label}\n{words}"


def _bar(bar: Bar, y: float, axis: Axis, timeline: Timeline, tz: tzinfo | None) -> str:
    end = bar.end if bar.end is not None else timeline.end
    left = axis.x(bar.start)
    width = max(axis.x(end) - left, 3.0)
    fill, ink = COLOURS.get(bar.outcome, ("#999999", "#ffffff"))
    top = y + (ROW_HEIGHT - BAR_HEIGHT) / 2
    out = [f'<g class="dwf-tl-bar" data-outcome="{_attr(bar.outcome)}">'
           f"<title>{escape(bar_title(bar, timeline, tz))}</title>"]
    if bar.planned_end is not None and bar.planned_end > end and bar.end is None:
        planned = min(axis.x(min(bar.planned_end, axis.end)), axis.right)
        if planned > left + width:
            out.append(f'<rect x="{left + width:.1f}" y="{top:.1f}" '
                       f'width="{planned - left - width:.1f}" height="{BAR_HEIGHT}" '
                       f'fill="none" stroke="{fill}" stroke-dasharray="3 2" rx="3"/>')
    stripes = ' stroke="#ffffff" stroke-opacity=".6" stroke-dasharray="2 2"' \
        if bar.outcome in ("retry-wait", "stopping", "queued") else ""
    out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" '
               f'height="{BAR_HEIGHT}" rx="3" fill="{fill}"{stripes}/>')
    text = _clip(bar.label, width - 6)
    if text:
        out.append(f'<text x="{left + 4:.1f}" y="{top + 10.5:.1f}" fill="{ink}" '
                   f'font-size="10">{escape(text)}</text>')
    if bar.end is None and timeline.running:  # still going: an open end
        out.append(f'<path d="M {left + width:.1f} {top:.1f} l 5 {BAR_HEIGHT / 2} '
                   f'l -5 {BAR_HEIGHT / 2} z" fill="{fill}"/>')
    out.append("</g>")
    return "".join(out)


def _mark(mark: Mark, y: float, axis: Axis, tz: tzinfo | None) -> str:
    x, middle = axis.x(mark.at), y + ROW_HEIGHT / 2
    colour = MARKS.get(mark.kind, "#444444")
    if mark.kind in ("error", "timeout", "overdue"):
        shape = (f'<path d="M {x:.1f} {middle - 6:.1f} l 6 6 l -6 6 l -6 -6 z" '
                 f'fill="{colour}" stroke="#ffffff" stroke-width="1"/>')
    elif mark.kind == "journal":  # a step of durable code: a small tick across its bar
        shape = (f'<rect x="{x - 1:.1f}" y="{middle - 5:.1f}" width="2" height="10" '
                 f'fill="{colour}" stroke="#ffffff" stroke-width="0.5"/>')
    else:
        shape = (f'<circle cx="{x:.1f}" cy="{middle:.1f}" r="4.5" fill="{colour}" '
                 'stroke="#ffffff" stroke-width="1"/>')
    return (f'<g class="dwf-tl-mark" data-kind="{_attr(mark.kind)}">'
            f"<title>{escape(mark.text)}\n{_moment(mark.at, tz, whole=True)}</title>"
            f"{shape}</g>")


def timeline_svg(timeline: Timeline, *, tz: tzinfo | None = None, title: str = "Timeline"
                 ) -> str:
    """The timeline as a standalone ``<svg>`` element (inline styles, no script)."""
    lanes: list[Lane] = list(timeline.lanes[:MAX_LANES])
    hidden = len(timeline.lanes) - len(lanes)
    rows = len(lanes) + (1 if hidden else 0)
    height = AXIS_HEIGHT + max(rows, 1) * ROW_HEIGHT + 8
    instants = [t for lane in lanes for t in (
        *(b.start for b in lane.bars), *(b.end for b in lane.bars if b.end is not None),
        *(m.at for m in lane.marks))]
    axis = Axis(timeline.start, timeline.end, instants, LABEL_WIDTH + 8, WIDTH - RIGHT)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="dwf-timeline" width="{WIDTH}" '
           f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
           f'aria-label="{_attr(title)}" '
           'font-family="-apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">',
           f"<title>{escape(title)}</title>"]
    bottom = AXIS_HEIGHT + rows * ROW_HEIGHT
    for index in range(rows):  # stripes, so that a row is easy to follow
        if index % 2 == 0:
            out.append(f'<rect x="0" y="{AXIS_HEIGHT + index * ROW_HEIGHT}" width="{WIDTH}" '
                       f'height="{ROW_HEIGHT}" fill="#f6f8fa"/>')
    for t in ticks(axis):
        x = axis.x(t)
        out.append(f'<line class="dwf-tl-tick" x1="{x:.1f}" y1="{AXIS_HEIGHT - 6}" '
                   f'x2="{x:.1f}" y2="{bottom}" stroke="#e1e4e8"/>'
                   f'<text x="{x:.1f}" y="{AXIS_HEIGHT - 10}" text-anchor="middle" '
                   f'fill="#666666" font-size="10">{escape(_tick_label(t, timeline, tz))}'
                   "</text>")
    for piece in axis.breaks:  # a cut across every lane, saying how long it was
        middle = (piece.left + piece.right) / 2
        out.append(f'<g class="dwf-tl-break"><title>Nothing happened for '
                   f"{span_words(piece.end - piece.start)}: {_moment(piece.start, tz, True)} "
                   f"to {_moment(piece.end, tz, True)}</title>"
                   f'<rect x="{piece.left + 4:.1f}" y="{AXIS_HEIGHT - 4}" '
                   f'width="{BREAK_WIDTH - 8}" height="{bottom - AXIS_HEIGHT + 4}" '
                   f'fill="#ffffff" fill-opacity=".75"/>'
                   f'<path d="M {piece.left + 6:.1f} {AXIS_HEIGHT - 4} l 4 4 l -4 4" '
                   f'fill="none" stroke="#999999"/>'
                   f'<text x="{middle:.1f}" y="{AXIS_HEIGHT - 10}" text-anchor="middle" '
                   f'fill="#444444" font-size="10" font-style="italic">'
                   f"{escape(span_words(piece.end - piece.start))}</text>"
                   f'<line x1="{piece.left + 6:.1f}" y1="{AXIS_HEIGHT}" '
                   f'x2="{piece.left + 6:.1f}" y2="{bottom}" stroke="#bbbbbb" '
                   f'stroke-dasharray="2 3"/>'
                   f'<line x1="{piece.right - 6:.1f}" y1="{AXIS_HEIGHT}" '
                   f'x2="{piece.right - 6:.1f}" y2="{bottom}" stroke="#bbbbbb" '
                   f'stroke-dasharray="2 3"/></g>')
    for index, lane in enumerate(lanes):
        y = AXIS_HEIGHT + index * ROW_HEIGHT
        out.append(f'<g class="dwf-tl-lane" data-lane="{_attr(lane.key)}" '
                   f'data-kind="{_attr(lane.kind)}">'
                   f"<title>{escape(lane.label)}</title>"
                   f'<text x="8" y="{y + 16}" fill="#333333"'
                   + (' font-weight="600"' if lane.kind == "steps" else "")
                   + f">{escape(_clip(lane.label, LABEL_WIDTH - 12))}</text>")
        out.extend(_bar(bar, y, axis, timeline, tz) for bar in lane.bars)
        out.extend(_mark(mark, y, axis, tz) for mark in lane.marks)
        out.append("</g>")
    if hidden:
        out.append(f'<text x="8" y="{AXIS_HEIGHT + len(lanes) * ROW_HEIGHT + 16}" '
                   f'fill="#666666" font-style="italic">and {hidden} more lanes, not drawn'
                   "</text>")
    if timeline.running:
        x = axis.x(timeline.end)
        out.append(f'<g class="dwf-tl-now"><line x1="{x:.1f}" y1="{AXIS_HEIGHT - 4}" '
                   f'x2="{x:.1f}" y2="{bottom}" stroke="#ba2121" stroke-dasharray="3 3"/>'
                   f'<text x="{x - 3:.1f}" y="{bottom + 0:.1f}" text-anchor="end" '
                   'fill="#ba2121" font-size="9" dy="-2">now</text></g>')
    out.append("</svg>")
    return "".join(out)
