"""How an instance's events become the bars and marks of its timeline (:mod:`.timeline`).

Events are read oldest first; what is open (a stay, an attempt, a wait, a task) is
closed by the event that ends it, and what is still open at the end goes on to the
timeline's end. Attempt rows add what a worker claimed before the instance recorded it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..engine.events import CHILD_LANE, STAY_ENDS
from ..engine.messages import INTERRUPTED_OPERATION
from ..engine.snapshot import FINISHED
from .timeline import (
    AttemptRow,
    Bar,
    Child,
    Happening,
    JournalRow,
    Lane,
    Mark,
    Timeline,
    Titles,
    span_words,
)


def timed_out(message: str | None) -> bool:
    return bool(message) and "timed out" in str(message)


class _Builder:
    """Reads events oldest first and keeps what is open (a stay, attempts, a wait...)."""

    def __init__(self, titles: Titles) -> None:
        self.titles = titles
        self.lanes: dict[str, Lane] = {}
        self.stay: tuple[str, float] | None = None  # the open stay: step, since
        # operation -> its attempts in the order they were queued (a retry of the workflow
        # may count them from 1 again)
        self.attempts: dict[str, list[dict[str, Any]]] = {}
        self.retry_wait: dict[str, tuple[float, float]] = {}  # operation -> since, delay
        self.retry_after_stop: dict[str, float] = {}  # operation -> delay, once stopped
        self.branches: dict[str, float] = {}  # step:branch -> started
        self.tasks: dict[str, dict[str, Any]] = {}  # task id -> opened, lane, candidates
        self.wait: dict[str, Any] | None = None
        self.paused: float | None = None
        self.compensations: dict[str, float] = {}

    def lane(self, key: str, label: str, kind: str) -> Lane:
        found = self.lanes.get(key)
        if found is None:
            found = self.lanes[key] = Lane(key, label, kind)
        return found

    @property
    def steps(self) -> Lane:
        return self.lane("steps", "steps", "steps")

    def mark(self, lane: Lane, at: float, kind: str, text: str) -> None:
        lane.marks.append(Mark(at, kind, text))

    # -- steps -------------------------------------------------------------------------

    def close_stay(self, at: float, outcome: str) -> None:
        if self.stay is not None:
            step, since = self.stay
            title = self.titles.step(step)
            self.steps.bars.append(Bar(since, at, outcome, title, f"{title} ({step}): {outcome}"))
            self.stay = None

    def read_step(self, event: Happening) -> None:
        kind, at, data = event.type, event.at, event.data
        if kind == "step-enter":
            self.close_stay(at, "left")
            self.stay = (event.step, at)
        elif kind in ("back", "rewind"):  # the step it goes back to is current again
            self.close_stay(at, STAY_ENDS[kind])
            self.stay = (event.step, at)
        elif kind == "skip" and (self.stay is None or self.stay[0] != event.step):
            self.mark(self.steps, at, "skip", f"{self.titles.step(event.step)} skipped: "
                                              "not available")
        elif kind in STAY_ENDS:
            self.close_stay(at, STAY_ENDS[kind])
            self.end_wait(at, "left", "the step was left")
            if kind == "cancel":
                reason = data.get("reason")
                self.mark(self.steps, at, "cancel", "cancelled" + (f": {reason}" if reason
                                                                    else ""))
            elif kind == "complete":
                self.mark(self.steps, at, "complete", "completed")
        elif kind == "start":
            self.mark(self.steps, at, "start", "started")
        elif kind == "error" and data.get("item"):  # an undo that failed
            self.end_compensation(str(data["item"]), at, "failed", event.error or "")
        elif kind == "error":
            self.mark(self.steps, at, "error", f"failed: {event.error}")
        elif kind == "retry":
            self.mark(self.steps, at, "retry", "retried")
        elif kind == "rollback":
            phase = str(data.get("phase", ""))
            if phase == "finished":
                self.close_stay(at, "rolled back")
            self.mark(self.steps, at, "rollback", f"rollback {phase}".strip())

    # -- operations --------------------------------------------------------------------

    def attempt(self, operation: str, number: Any = None, *, new: bool = False
                ) -> dict[str, Any]:
        """The latest attempt ``number`` of ``operation`` (its latest of all when not
        given); ``new``: one queued now."""
        self.lane(f"operation:{operation}", self.titles.operation(operation), "operation")
        runs = self.attempts.setdefault(operation, [])
        found = next((run for run in reversed(runs)
                      if number is None or run["number"] == int(number)), None)
        if found is None or new:
            found = {"number": int(number or (runs[-1]["number"] + 1 if runs else 1))}
            runs.append(found)
        return found

    def end_retry_wait(self, operation: str, at: float) -> None:
        waiting = self.retry_wait.pop(operation, None)
        if waiting is not None:
            since, delay = waiting
            self.lanes[f"operation:{operation}"].bars.append(Bar(
                since, at, "retry-wait", "retry wait",
                f"waited {span_words(at - since)} for the retry delay ({span_words(delay)})"))

    def read_operation(self, event: Happening) -> None:
        kind, at, data = event.type, event.at, event.data
        operation = str(data.get("operation", ""))
        if kind == "operation-queued":
            self.end_retry_wait(operation, at)
            self.attempt(operation, data.get("attempt"), new=True)["queued"] = at
        elif kind == "operation-started":
            self.attempt(operation, data.get("attempt"))["started"] = at
        elif kind == "operation-succeeded":
            self.attempt(operation, data.get("attempt")).update(end=at, outcome="succeeded")
        elif kind == "operation-retrying":  # the attempt before the one it names failed
            delay = float(data.get("delay") or 0)
            found = self.attempt(operation, int(data.get("attempt") or 2) - 1)
            if timed_out(event.error):  # the next one waits until this one stopped
                found.update(outcome="timed out", stop_from=at, error=event.error)
                self.retry_after_stop[operation] = delay
            else:
                found.update(end=at, outcome="failed", error=event.error)
                if delay > 0:
                    self.retry_wait[operation] = (at, delay)
        elif kind == "operation-failed":
            found = self.attempt(operation)
            if timed_out(event.error):
                found.setdefault("stop_from", at)
                found.update(outcome="timed out", error=event.error)
            elif "end" not in found:
                found.update(end=at, error=event.error, outcome="interrupted"
                             if event.error == INTERRUPTED_OPERATION else "failed")
        elif kind in ("operation-cancelled", "operation-blocked"):
            self.end_retry_wait(operation, at)
            found = self.attempt(operation)
            outcome = "cancelled" if kind == "operation-cancelled" else "blocked"
            why = data.get("reason") or event.error
            if "end" in found or "stop_from" in found:
                return
            if kind == "operation-cancelled" and "started" in found:
                found.update(outcome=outcome, stop_from=at, error=why)  # until it stops
            else:
                found.update(end=at, outcome=outcome, error=why)
        elif kind == "operation-skipped":
            self.mark(self.lane(f"operation:{operation}", self.titles.operation(operation),
                                "operation"), at, "skip", "skipped by hand")

    def attempt_stopped(self, event: Happening) -> None:
        target = str(event.data.get("target", ""))
        for found in self.attempts.get(target, []):
            if "stop_from" in found and "end" not in found:
                found["end"] = event.at
        delay = self.retry_after_stop.pop(target, None)
        if delay:  # the next attempt waits its delay from now
            self.retry_wait[target] = (event.at, delay)

    # -- branches, compensations -------------------------------------------------------

    def read_branch(self, event: Happening) -> None:
        name = str(event.data.get("branch", ""))
        key = f"{event.step}:{name}"
        lane = self.lane(f"branch:{key}", f"branch {name}", "branch")
        if event.type == "branch-started":
            self.branches[key] = event.at
            return
        began = self.branches.pop(key, None)
        outcome = event.type.removeprefix("branch-")
        why = str(event.data.get("error") or event.data.get("reason") or "")
        if began is None:
            self.mark(lane, event.at, "cancel" if outcome == "cancelled" else "error",
                      f"{outcome} before a worker took it" + (f": {why}" if why else ""))
        else:
            lane.bars.append(Bar(began, event.at, outcome, outcome,
                                 f"branch {name} of {self.titles.step(event.step)}: {outcome}"
                                 + (f": {why}" if why else "")))

    def end_compensation(self, item: str, at: float, outcome: str, error: str) -> None:
        lane = self.lane("rollback", "rollback", "rollback")
        words = f"undo of {item}: {outcome}" + (f": {error}" if error else "")
        began = self.compensations.pop(item, None)
        if began is None:
            self.mark(lane, at, "error" if outcome == "failed" else "complete", words)
        else:
            lane.bars.append(Bar(began, at, outcome, item, words))

    # -- tasks, waits, pauses ----------------------------------------------------------

    def read_task(self, event: Happening) -> None:
        task = str(event.data.get("task", ""))
        # A task durable code asked has its own title, and a lane of its own.
        asked = event.data.get("title")
        title = asked or self.titles.task(event.step)
        key = f"task:{event.step}:{asked}" if asked else f"task:{event.step}"
        lane = self.lane(key, f"task: {title}", "task")
        if event.type == "task-open":
            candidates = ", ".join(event.data.get("candidates") or ()) or "nobody named"
            self.tasks[task] = {"opened": event.at, "lane": lane, "candidates": candidates}
        elif event.type == "task-claim":
            self.mark(lane, event.at, "claim", f"claimed by {event.actor or 'someone'}")
        elif event.type == "task-release":
            self.mark(lane, event.at, "claim", "released")
        elif event.type == "task-overdue":
            escalated = ", ".join(event.data.get("escalated_to") or ())
            self.mark(lane, event.at, "overdue", "overdue" + (
                f"; escalated to {escalated}" if escalated else ""))
        elif event.type in ("task-complete", "task-cancel"):
            opened = self.tasks.pop(task, None)
            if opened is None:
                return
            if event.type == "task-complete":
                who = event.actor or "someone"
                lane.bars.append(Bar(opened["opened"], event.at, "done", f"decided by {who}",
                                     f"{title}: decided by {who} (candidates: "
                                     f"{opened['candidates']})"))
            else:
                reason = event.data.get("reason") or ""
                lane.bars.append(Bar(opened["opened"], event.at, "cancelled", "cancelled",
                                     f"{title}: cancelled" + (f" ({reason})" if reason else "")))

    def read_wait(self, event: Happening) -> None:
        lane = self.lane("waits", "waiting", "wait")
        data = event.data
        if event.type == "signal-wait":
            correlation = f" ({data['correlation']})" if data.get("correlation") else ""
            self.wait = {"since": event.at, "label": f"signal {data.get('signal')}",
                         "what": f"the signal {data.get('signal')}{correlation}",
                         "until": data.get("until")}
        elif event.type == "timer-wait":
            self.wait = {"since": event.at, "label": "timer", "what": "a timer",
                         "until": data.get("until")}
        elif event.type == "signal":
            sender = f" from {data['sender']}" if data.get("sender") else ""
            if self.wait is None:
                self.mark(lane, event.at, "signal", f"the signal {data.get('signal')} came")
            self.end_wait(event.at, "arrived", f"it arrived{sender}")
        elif event.type == "signal-timeout":
            self.end_wait(event.at, "timed out",
                          f"it did not come in time (on timeout: {data.get('on_timeout')})")
        elif event.type == "timer-fire":
            self.end_wait(event.at, "fired", "the time came")
        elif event.type == "pause":
            self.paused = event.at
        elif event.type == "resume" and self.paused is not None:
            held = int(data.get("held") or 0)
            lane.bars.append(Bar(self.paused, event.at, "paused", "paused",
                                 f"paused; {held} input{'s' if held != 1 else ''} held "
                                 "for resume"))
            self.paused = None
        elif event.type == "resume" and data.get("interrupted"):
            self.mark(self.steps, event.at, "error", f"{data['interrupted']} lost its worker")

    def end_wait(self, at: float, outcome: str, words: str) -> None:
        if self.wait is not None:
            wait, self.wait = self.wait, None
            self.lanes["waits"].bars.append(Bar(
                wait["since"], at, outcome, wait["label"], f"waited for {wait['what']}: "
                                                           f"{words}",
                planned_end=wait["until"]))

    def read(self, event: Happening) -> None:
        kind = event.type
        if kind.startswith("operation-"):
            self.read_operation(event)
        elif kind == "attempt-stopped":
            if event.data.get("kind") == "operation":
                self.attempt_stopped(event)
        elif kind.startswith("branch-"):
            self.read_branch(event)
        elif kind.startswith("task-"):
            self.read_task(event)
        elif kind in WAIT_EVENTS:
            self.read_wait(event)
        elif kind == "compensation-started":
            self.compensations[str(event.data.get("item", ""))] = event.at
        elif kind == "compensate":
            self.end_compensation(str(event.data.get("item", "")), event.at, "compensated", "")
        else:
            self.read_step(event)

    # -- what is still open at the end -------------------------------------------------

    def claims(self, rows: Iterable[AttemptRow]) -> None:
        """What the attempts' rows know that the events may not yet: a worker's claim, its
        name, an attempt that was interrupted or dropped, one that waits for a slot."""
        for row in rows:
            if row.kind != "operation":
                continue
            known = min((run for run in self.attempts.get(row.target, ())
                         if run["number"] == row.number),
                        key=lambda run: abs(run.get("queued", 0.0) - row.enqueued_at),
                        default=None)
            if known is None and row.status not in ("queued", "running", "waiting"):
                continue
            found = known or self.attempt(row.target, row.number, new=True)
            found.setdefault("queued", row.enqueued_at)
            if row.claimed_at is not None and row.status != "dropped":
                found.setdefault("started", row.claimed_at)
            if row.worker:
                found["worker"] = row.worker
            if row.status == "interrupted" and "end" not in found:
                found.update(end=row.finished_at, outcome="interrupted")
            if row.status == "waiting":  # held back by its Limit or Rate
                found["waiting"] = True

    def journal(self, rows: Iterable[JournalRow]) -> None:
        """Each entry of an operation's journal, a mark on its lane where it finished."""
        for row in rows:
            lane = self.lane(f"operation:{row.operation}",
                             self.titles.operation(row.operation), "operation")
            self.mark(lane, row.finished_at, "journal", journal_words(row))

    def finish(self, status: str, end: float) -> None:
        ongoing = status not in FINISHED
        for operation, attempts in self.attempts.items():
            lane = self.lanes[f"operation:{operation}"]
            title = self.titles.operation(operation)
            for run in attempts:
                lane.bars.extend(attempt_bars(run, title))
                if run.get("outcome") == "timed out":
                    self.mark(lane, run["stop_from"], "timeout",
                              f"attempt {run['number']} timed out")
            waiting = self.retry_wait.get(operation)
            if waiting is not None and ongoing:
                since, delay = waiting
                lane.bars.append(Bar(since, None, "retry-wait", "retry wait",
                                     f"waiting for the retry delay ({span_words(delay)})",
                                     planned_end=since + delay))
            lane.bars.sort(key=lambda bar: bar.start)  # retry waits among the attempts
        for key, began in self.branches.items():
            self.lanes[f"branch:{key}"].bars.append(Bar(began, None if ongoing else end,
                                                        "running", "running", ""))
        for opened in self.tasks.values():
            opened["lane"].bars.append(Bar(opened["opened"], None if ongoing else end, "open",
                                           "open", f"open; candidates: "
                                                   f"{opened['candidates']}"))
        if self.wait is not None:
            wait = self.wait
            self.lanes["waits"].bars.append(Bar(wait["since"], None if ongoing else end,
                                                "waiting", wait["label"],
                                                f"waiting for {wait['what']}",
                                                planned_end=wait["until"]))
        if self.paused is not None:
            self.lanes["waits"].bars.append(Bar(self.paused, None, "paused", "paused",
                                                "paused"))
        for item, began in self.compensations.items():
            self.lane("rollback", "rollback", "rollback").bars.append(
                Bar(began, None if ongoing else end, "running", item, f"undo of {item}"))
        if self.stay is not None:
            step, since = self.stay
            outcome = STILL.get(status, "current")
            title = self.titles.step(step)
            self.steps.bars.append(Bar(since, None if ongoing else end, outcome, title,
                                       f"{title} ({step}): {outcome}"))


# The instance's status, as its open stay is drawn.
STILL = {"failed": "failed", "blocked": "blocked", "paused": "paused", "completed": "completed",
         "cancelled": "cancelled", "rolling-back": "rolling back"}
WAIT_EVENTS = ("signal-wait", "timer-wait", "signal", "signal-timeout", "timer-fire", "pause",
               "resume")


def journal_words(row: JournalRow) -> str:
    """What hovering a journal's mark says: ``step "charge-2" (#1) done, 3 tries``."""
    if row.kind == "step":
        tries = f", {row.tries} tries" if row.tries > 1 else ""
        return f'step "{row.name}" (#{row.position}) done{tries}'
    if row.kind == "patch":
        return f'patch "{row.name}" (#{row.position}) taken'
    what = {"sleep": "sleep", "signal": f'wait for the signal "{row.name}"',
            "task": f'task "{row.name}"'}.get(row.kind, f'{row.kind} "{row.name}"')
    return f"{what} (#{row.position}) ended"


def attempt_bars(attempt: dict[str, Any], title: str) -> list[Bar]:
    """An attempt's wait for a worker and its run, coloured by how it ended; a timed-out or
    cancelled one's stop after."""
    number = attempt["number"]
    queued, started = attempt.get("queued"), attempt.get("started")
    ended, outcome = attempt.get("end"), attempt.get("outcome") or "running"
    stop_from = attempt.get("stop_from")
    if attempt.get("waiting") and queued is not None and ended is None:  # no worker asked yet
        return [Bar(queued, None, "queued", f"#{number} waiting",
                    f"attempt {number} of {title} waits for a slot")]
    bars = []
    if queued is not None and (started is None or started > queued):
        bars.append(Bar(queued, started if started is not None else ended,
                        "queued" if started is not None or ended is None else outcome,
                        f"#{number} queued", f"attempt {number} of {title} waited for a "
                                             "worker" + ("" if started is not None
                                                         else f": {outcome}")))
    if started is not None:
        error = attempt.get("error")
        worker = f" on {attempt['worker']}" if attempt.get("worker") else ""
        words = f"attempt {number} of {title}{worker}: {outcome}" + (
            f": {error}" if error else "")
        if stop_from is not None:
            bars.append(Bar(started, stop_from, outcome, f"#{number}", words))
            bars.append(Bar(stop_from, ended, "stopping", "stopping",
                            f"attempt {number} was told to stop; its worker "
                            + ("stopped" if ended is not None else "has not stopped yet")))
        else:
            bars.append(Bar(started, ended, outcome, f"#{number}", words))
    return bars


def stays_lane(child: Child, titles: Titles) -> Lane:
    """A nested child's steps as one lane (its own events, its own stays)."""
    builder = _Builder(titles)
    for event in child.events:
        if event.type in CHILD_LANE:
            builder.read(event)
    end = child.events[-1].at if child.events else 0.0
    builder.finish(child.status, end)
    lane = builder.steps
    return Lane(f"child:{child.label}", f"↳ {child.label}", "child", lane.bars, lane.marks)


def timeline_of(events: Sequence[Happening], *, now: float, titles: Titles | None = None,
                attempts: Iterable[AttemptRow] = (), status: str = "running",
                finished_at: float | None = None, children: Sequence[Child] = (),
                child_titles: Mapping[str, Titles] | None = None,
                omitted: int = 0, journal: Iterable[JournalRow] = ()) -> Timeline:
    """The lanes of an instance's history, oldest event first, up to ``now`` (or to when
    it finished). ``attempts``: the rows of its attempts (running ones the events do not
    know yet); ``children``: its nested instances, each a lane of its steps; ``journal``:
    the entries of its operations' journals, marks on their lanes."""
    titles = titles or Titles()
    builder = _Builder(titles)
    for event in events:
        builder.read(event)
    running = finished_at is None
    end = max([now if running else finished_at or now, *(e.at for e in events[-1:])])
    builder.claims(attempts)
    builder.journal(row for row in journal if row.finished_at <= end)
    builder.finish(status, end)
    lanes = list(builder.lanes.values())
    for child in children:
        lanes.append(stays_lane(child, (child_titles or {}).get(child.label, Titles())))
    lanes = [lane for lane in lanes if lane.bars or lane.marks]
    firsts = [t for lane in lanes for t in (*(b.start for b in lane.bars),
                                              *(m.at for m in lane.marks))]
    start = min([*firsts, *(e.at for e in events[:1])], default=end)
    ordered = sorted(lanes, key=lambda lane: (lane.kind != "steps", min(
        [*(b.start for b in lane.bars), *(m.at for m in lane.marks)], default=end)))
    return Timeline(tuple(ordered), start, max(end, start), omitted, running)
