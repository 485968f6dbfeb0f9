"""What must hold of the rows of the stateful tests' world (``tests/stateful_world.py``)
after every rule: each check returns what broke, one sentence each (empty: it holds).

They read the rows ``bench/invariants.py`` reads (into its ``Data``) and reuse its replay
of an event log, its revision gaps and its check of live work; what that module does not
know of (pause, resume, rewind, signals, the sweep's failures, the fake clock) is added
here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.utils import timezone

from bench import invariants
from django_workflows import clock
from django_workflows.models import (
    Attempt,
    AttemptStatus,
    Deadline,
    SignalStatus,
    SweepFailure,
    SweepItem,
    WorkflowEvent,
    WorkflowInstance,
    WorkflowSignal,
)
from tests.stateful_world import KEY, MAY_NEVER_SEND, SETTINGS, World, runs_of_code

LIMITS = invariants.Limits(heartbeat_timeout=SETTINGS["HEARTBEAT_TIMEOUT"],
                           sweep_interval=SETTINGS["SWEEP_INTERVAL"], slack=10)
SETTLED = {SignalStatus.TAKEN, SignalStatus.KEPT, SignalStatus.HELD, SignalStatus.REFUSED,
           SignalStatus.EXPIRED}
ADDRESSES = (("instance_id", "pk"), ("reference", "reference"), ("correlation", "correlation"))


@dataclass
class Rows:
    """The rows the checks read, once after each rule."""

    data: invariants.Data
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)  # columns bench skips
    signals: list[dict[str, Any]] = field(default_factory=list)
    deadlines: list[dict[str, Any]] = field(default_factory=list)
    failures: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def paused(self, instance_id: str) -> bool:
        return self.data.instances[instance_id]["status"] == "paused"

    def held_signals(self, instance_id: str) -> set[Any]:
        """The signals (row ids) a paused instance holds for its resume."""
        paused = self.data.instances[instance_id]["snapshot"].get("paused") or {}
        return {held["values"].get("signal_id") for held in paused.get("held") or ()
                if held.get("command") == "signal"}


def load() -> invariants.Data:
    """What ``invariants.load`` reads, through the ORM: its plain SQL casts JSON ``AS TEXT``,
    which MariaDB does not know, and the services' tests run there too."""
    data = invariants.Data(now=clock.now_datetime())
    for row in WorkflowInstance.objects.values(
            "id", "workflow", "version", "status", "current_step", "snapshot", "state",
            "parent_id", "parent_step", "revision"):
        row["id"], row["parent_id"] = str(row["id"]), row["parent_id"] and str(row["parent_id"])
        data.instances[row["id"]] = row
    for row in WorkflowEvent.objects.order_by("instance_id", "sequence").values(
            "instance_id", "sequence", "type", "step", "revision", "data", "error"):
        row["instance_id"] = str(row["instance_id"])
        data.events.setdefault(row["instance_id"], []).append(row)
    for row in Attempt.objects.values(
            "token", "instance_id", "kind", "target", "status", "stop_reason", "enqueued_at",
            "claimed_at", "heartbeat_at", "finished_at", "limit_key", "limit_max"):
        row["instance_id"] = str(row["instance_id"])
        data.attempts[row["token"]] = row
    data.deadlines = [{**row, "instance_id": str(row["instance_id"])} for row in
                      Deadline.objects.values("instance_id", "kind", "token", "due_at")]
    return data


def read() -> Rows:
    rows = Rows(load())
    rows.instances = {str(row["id"]): row for row in WorkflowInstance.objects.values(
        "id", "workflow", "status", "last_event", "awaiting", "correlation", "reference")}
    rows.signals = list(WorkflowSignal.objects.values(
        "pk", "workflow", "name", "message_id", "status", "taken_by", "sender_id",
        "instance_id", "reference", "correlation"))
    rows.deadlines = list(Deadline.objects.values("pk", "instance_id", "kind", "due_at"))
    rows.failures = {(row["kind"], row["key"]): row for row in SweepFailure.objects.values(
        "kind", "key", "error", "quarantined_at", "retry_at")}
    rows.attempts = list(Attempt.objects.values(
        "token", "instance_id", "status", "limit_key", "limit_max", "heartbeat_at",
        "timeout_at"))
    return rows


def _where(rows: Rows, instance_id: str) -> str:
    return f"{rows.data.instances[instance_id]['workflow']} {instance_id}"


# -- 1. senders ----------------------------------------------------------------------------


def nothing_from_who_may_not_send(world: World, rows: Rows) -> list[str]:
    """No signal took effect from a sender who may not send it: none from the owner or a
    stranger, none from a user on an instance locked then (the tenant rule); nor is one
    from the owner or a stranger on record."""
    people = {str(user.pk): name for name, user in world.people.items() if user is not None}
    found = []
    for instance_id, events in rows.data.events.items():
        for event in events:
            sender = event["data"].get("sender") if event["type"] == "signal" else None
            if sender is None:
                continue
            name = people.get(sender, f"user {sender}")
            if name in MAY_NEVER_SEND:
                found.append(f"{_where(rows, instance_id)}: event #{event['sequence']} is a "
                             f"signal the {name} sent, who may not send it")
            elif world.locked_at(instance_id, event["revision"]):
                found.append(f"{_where(rows, instance_id)}: event #{event['sequence']} is a "
                             f"signal the {name} sent to it while it was locked")
    refused_senders = {user.pk: name for name, user in world.people.items()
                       if name in MAY_NEVER_SEND}
    found += [f"signal {row['pk']} ({row['status']}) is on record from the "
              f"{refused_senders[row['sender_id']]}, who may not send it"
              for row in rows.signals if row["sender_id"] in refused_senders]
    return found


# -- 2. the sweep ----------------------------------------------------------------------------


def due_work_swept(world: World, rows: Rows) -> list[str]:
    """After a sweep at T: every deadline due by T fired, every attempt past its timeout by T
    and every attempt silent since T - HEARTBEAT_TIMEOUT was dealt with, or its item is
    recorded as failed, with its error (held back for a retry, or set aside)."""
    swept_at = world.swept_at
    if swept_at is None:
        return []
    silent_since = swept_at - timedelta(seconds=SETTINGS["HEARTBEAT_TIMEOUT"])
    due = [(SweepItem.DEADLINE, str(row["pk"]), row["instance_id"],
            f"{row['kind']} deadline due at {row['due_at']:%H:%M:%S}")
           for row in rows.deadlines if row["due_at"] <= swept_at]
    for attempt in rows.attempts:
        if attempt["status"] != AttemptStatus.RUNNING:
            continue
        if attempt["timeout_at"] is not None and attempt["timeout_at"] <= swept_at:
            due.append((SweepItem.ATTEMPT_TIMEOUT, attempt["token"], attempt["instance_id"],
                        f"attempt {attempt['token']} timed out at "
                        f"{attempt['timeout_at']:%H:%M:%S}"))
        if attempt["heartbeat_at"] is not None and attempt["heartbeat_at"] < silent_since:
            due.append((SweepItem.SILENT_ATTEMPT, attempt["token"], attempt["instance_id"],
                        f"attempt {attempt['token']} silent since "
                        f"{attempt['heartbeat_at']:%H:%M:%S}"))
    found = []
    for kind, key, instance_id, what in due:
        failure = rows.failures.get((kind, key))
        where = _where(rows, str(instance_id))
        if failure is None:
            found.append(f"{where}: the sweep at {swept_at:%H:%M:%S} left its {what} as it "
                         "was, and recorded no failure")
        elif not failure["error"]:
            found.append(f"{where}: its {what} failed in the sweep, with no error recorded")
    return found


# -- 3. limits ---------------------------------------------------------------------------


def no_key_runs_more_than_its_limit(world: World, rows: Rows) -> list[str]:
    """At most ``max`` attempts of the key hold a slot (queued or running), and the code of
    one hand-out ran at most once. (True at any moment: threads check it as they go.)"""
    holding = [a for a in rows.attempts if a["limit_key"] == KEY
               and a["status"] in (AttemptStatus.QUEUED, AttemptStatus.RUNNING)]
    found = [f"{len(holding)} attempts of key {KEY} hold a slot, its max is 1: "
             f"{sorted((a['token'], a['status']) for a in holding)}"] if len(holding) > 1 else []
    found += [f"the code of attempt {token} ran {n} times"
              for token, n in runs_of_code().items() if n > 1]
    return found


def no_attempt_waits_while_its_key_has_room(world: World, rows: Rows) -> list[str]:
    """None waits for a slot of a key that has room, but a paused instance's (it starts when
    its instance resumes). (When all is quiet: a slot freed is given on in a transaction of
    its own.)

    Not bench's ``check_limits``, which times the attempts' claims and ends: a claim is
    stamped by the service's clock, an end by the real one, and under a fake clock their
    spans mean nothing (two claims at the same fake instant overlap whatever happened)."""
    if any(a["limit_key"] == KEY and a["status"] in (AttemptStatus.QUEUED,
                                                     AttemptStatus.RUNNING)
           for a in rows.attempts):
        return []
    return [f"attempt {a['token']} of {_where(rows, str(a['instance_id']))} waits for a slot "
            f"of {KEY}, which has room" for a in rows.attempts
            if a["limit_key"] == KEY and a["status"] == AttemptStatus.WAITING
            and not rows.paused(str(a["instance_id"]))]


# -- 4. message ids ---------------------------------------------------------------------------


def message_ids_take_effect_once(world: World, rows: Rows) -> list[str]:
    """A message id takes effect at most once per instance (one ``signal`` event), and its
    row names as having taken it exactly the instances that have its event (or hold it,
    paused)."""
    found = []
    with_event: dict[tuple[str, str], set[str]] = defaultdict(set)  # (workflow, id): takers
    for instance_id, events in rows.data.events.items():
        ids = Counter(e["data"].get("message_id") for e in events if e["type"] == "signal")
        found += [f"{_where(rows, instance_id)}: message {mid} took effect {n} times"
                  for mid, n in ids.items() if mid is not None and n > 1]
        for mid in ids:
            if mid is not None:
                with_event[rows.data.instances[instance_id]["workflow"], mid].add(instance_id)
    for row in rows.signals:
        if row["message_id"] is None:
            continue
        holders = {pk for pk in row["taken_by"]
                   if pk in rows.data.instances and row["pk"] in rows.held_signals(pk)}
        recorded = set(row["taken_by"]) - holders
        took = with_event.get((row["workflow"], row["message_id"]), set())
        if recorded != took:
            found.append(f"signal {row['pk']} (message {row['message_id']}, {row['status']}) "
                         f"was taken by {sorted(recorded)}, its event is on {sorted(took)}")
    return found


# -- 5. history ---------------------------------------------------------------------------


def replay(events: Iterable[Mapping[str, Any]]) -> invariants.Replayed:
    """bench's replay of an event log, taught pause, resume and rewind: a rewind is as many
    backs as steps it left; a pause holds the status until resume (or cancel)."""
    plain: list[Mapping[str, Any]] = []
    paused = False
    for event in events:
        kind = event["type"]
        if kind in ("pause", "resume", "cancel"):
            paused = kind == "pause"
        if kind != "rewind":
            plain.append(event)
            continue
        history = invariants.replay(plain).history
        for index, _ in enumerate(event["data"].get("steps_left") or ()):
            plain.append({**event, "type": "back", "step": history[-2] if len(history) > 1
                          else None, "sequence": event["sequence"] if index == 0 else None})
            history = history[:-1]
    replayed = invariants.replay(plain)
    if paused:
        replayed.status = "paused"
    return replayed


def completed_steps_agree_with_history(world: World, rows: Rows) -> list[str]:
    """Each instance's event log, replayed, gives its status, current step, history,
    completed and skipped steps."""
    found = []
    for instance_id, row in rows.data.instances.items():
        replayed = replay(rows.data.events.get(instance_id, ()))
        snapshot = row["snapshot"]
        stored = {"status": row["status"], "current_step": row["current_step"] or None,
                  "history": list(snapshot.get("history") or []),
                  "completed_steps": list(snapshot.get("completed_steps") or []),
                  "skipped_steps": list(snapshot.get("skipped_steps") or [])}
        for name, value in stored.items():
            if getattr(replayed, name) != value:
                found.append(f"{_where(rows, instance_id)}: {name} is {value!r}, its events "
                             f"say {getattr(replayed, name)!r}")
        found += [f"{_where(rows, instance_id)}: {problem}" for problem in replayed.problems]
    return found


# -- 6. signals settled -----------------------------------------------------------------------


def accepted_signals_are_settled(world: World, rows: Rows) -> list[str]:
    """Every signal the service accepted is on record as taken, kept, held, refused or
    expired; a held one is held by a paused instance; a kept one is awaited by no instance
    that could take it (one actor at a time: none was busy)."""
    by_pk = {row["pk"]: row for row in rows.signals}
    found = []
    for sent in world.sent:
        row = by_pk.get(sent.row)
        if row is None:
            found.append(f"the signal accepted as {sent} has no row")
        elif row["status"] not in SETTLED:
            found.append(f"signal {sent.row} is {row['status']!r}")
    for row in rows.signals:
        if row["status"] == SignalStatus.HELD and not any(
                pk in rows.data.instances and rows.paused(pk)
                and row["pk"] in rows.held_signals(pk) for pk in row["taken_by"]):
            found.append(f"signal {row['pk']} is held, but by no paused instance: "
                         f"{row['taken_by']}")
        if world.strict and row["status"] == SignalStatus.KEPT:
            waiting = [pk for pk in _awaiting(rows, row) if pk not in row["taken_by"]]
            if waiting:
                found.append(f"signal {row['pk']} ({row['message_id']}) is kept while "
                             f"{', '.join(_where(rows, pk) for pk in waiting)} wait for it")
    return found


def _awaiting(rows: Rows, signal: Mapping[str, Any]) -> list[str]:
    """The instances that wait for ``signal`` by its address now (not paused)."""
    field_, column = next((f, c) for f, c in ADDRESSES if signal[f] is not None)
    wanted = str(signal[field_])
    return [pk for pk, row in rows.instances.items()
            if row["workflow"] == signal["workflow"] and row["awaiting"] == signal["name"]
            and row["status"] != "paused" and str(row["id"] if column == "pk" else row[column])
            == wanted]


# -- 7. events -------------------------------------------------------------------------------


def every_change_has_its_event(world: World, rows: Rows) -> list[str]:
    """Events are numbered 1..n, the instance counts n; every revision after the first has
    events; a row that changed since the last look has a new revision and new events."""
    found = []
    for instance_id, row in rows.data.instances.items():
        events = rows.data.events.get(instance_id, [])
        where = _where(rows, instance_id)
        numbers = [e["sequence"] for e in events]
        if numbers != list(range(1, len(numbers) + 1)):
            found.append(f"{where}: events numbered {numbers}")
        last_event = rows.instances[instance_id]["last_event"]
        if last_event != len(events):
            found.append(f"{where}: last_event is {last_event}, it has {len(events)} events")
        found += [f"{where}: {gap}" for gap in invariants.revision_gaps(row["revision"], events)]
        look = (row["status"], row["current_step"], row["state"], row["snapshot"])
        before = world.seen.get(instance_id)
        if before is not None:
            revision, count, seen = before
            if look != seen and (row["revision"] <= revision or len(events) <= count):
                found.append(f"{where}: changed at revision {row['revision']} (was "
                             f"{revision}) with {len(events)} events (was {count})")
            if row["revision"] < revision or len(events) < count:
                found.append(f"{where}: went back to revision {row['revision']} from "
                             f"{revision}, {len(events)} events from {count}")
        world.seen[instance_id] = (row["revision"], len(events), look)
    return found


# -- 8. live work ----------------------------------------------------------------------------


def work_in_flight_has_a_live_attempt(world: World, rows: Rows) -> list[str]:
    """bench's check of live work, on the instances that are not paused (a paused one holds
    what came back until it resumes). Heartbeats are written by the real clock, so they
    are judged by it; a silent worker is the sweep's to find (:func:`due_work_swept`)."""
    live = {pk: row for pk, row in rows.data.instances.items() if row["status"] != "paused"}
    return invariants.check_live_work(replace(rows.data, instances=live, now=timezone.now()),
                                      LIMITS)


CHECKS: dict[str, Callable[[World, Rows], list[str]]] = {
    "senders": nothing_from_who_may_not_send,
    "sweep": due_work_swept,
    "limits": no_key_runs_more_than_its_limit,
    "slots": no_attempt_waits_while_its_key_has_room,
    "message ids": message_ids_take_effect_once,
    "history": completed_steps_agree_with_history,
    "signals": accepted_signals_are_settled,
    "events": every_change_has_its_event,
    "live work": work_in_flight_has_a_live_attempt,
}


def broken(world: World, names: Iterable[str] = CHECKS) -> dict[str, list[str]]:
    """What broke, by check (only those that did)."""
    rows = read()
    results = {name: CHECKS[name](world, rows) for name in names}
    return {name: found for name, found in results.items() if found}
