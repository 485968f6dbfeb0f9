"""What must hold in a django-workflows database, whatever load or faults it went through.

Each check is a function of a :class:`Data` (rows read from the database) and
returns the list of violations, one sentence each; an empty list means it
holds. ``bench/load.py`` runs them after every run, and so does the test suite
(``tests/reliability``). Nothing here imports Django, and of django_workflows
only its pure engine's list of event types: the rows are read with plain SQL
through any DB-API connection (psycopg, or Django's own ``connection``), so the
checks judge the library from outside.

The checks:

``history``
    Replaying an instance's event log gives its stored snapshot: status,
    current step, history, completed steps and skipped steps (:func:`replay`);
    and every revision after the first has its events: the log never misses a change.
``live_work``
    No operation, branch or compensation is in flight without an attempt
    that can still finish it; no attempt told to stop is waited for in vain;
    no attempt is left ``running`` with a dead worker the sweep did not notice.
``deadlines``
    No deadline is overdue (the sweep fires them), no running step is past
    its timeout, no retry delay is over without a retry.
``payments``
    The fake payment provider of the example shop holds no duplicated effect:
    one charge per order at most, a charge refunded at most once and in
    full, a charge for every order that holds a successful payment and none
    (left unrefunded) for an order that does not, a refund only for an order
    whose payment was rolled back.
``stock``
    Stock reservations add up to each item's reserved count; a rolled-back
    order holds no reservation, no booked courier, no shipment.
``acknowledged``
    Every write a client saw succeed is there: each instance it was told
    about exists, at least at the revision it was shown.
``limits``
    No more attempts of a ``Limit``'s key ran at once than its ``max`` (by their
    claims and ends); no attempt waits for a slot of a key that has had room for
    longer than the sweep takes to notice.
``signals``
    No signal of a refused sender was recorded or taken (by the row's sender and by
    the events'); every signal recorded as taken was taken by the instances it names.

A deadline the sweep set aside after it failed (a ``SweepFailure`` row: a workflow a
deploy removed, a poisoned row) is not overdue: it waits, with its error, for someone to
try it again; the summary counts them.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django_workflows.engine.events import EVENT_TYPES  # pure Python, no Django

# Event types the replay knows; anything else is reported.
KNOWN_EVENTS = frozenset(EVENT_TYPES)
IN_FLIGHT = frozenset({"queued", "running", "retrying"})
LIVE_ATTEMPT = frozenset({"queued", "running", "waiting"})
SETTLED = frozenset({"idle", "completed", "cancelled", "failed", "blocked"})
FINAL = frozenset({"idle", "completed"})  # nothing left for an operator to decide

ORDER_WORKFLOW = "order-fulfilment"
CHARGE_OPERATION = "charge-card"


# -- reading the rows ----------------------------------------------------------------------


def _json(value: Any) -> Any:
    """A JSON column, read as text (``CAST(... AS TEXT)``: psycopg would decode jsonb
    itself, Django's cursor would not, and a JSON string is text either way)."""
    return None if value is None else json.loads(value)


def _id(value: Any) -> str | None:
    """An instance id as the API writes it (SQLite keeps UUIDs as 32 hex digits)."""
    if value is None or value == "":
        return None
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))


def _time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@dataclass
class Limits:
    """How long the background machinery may take before something counts as stuck."""

    heartbeat_timeout: float = 60.0  # DJANGO_WORKFLOWS["HEARTBEAT_TIMEOUT"]
    sweep_interval: float = 5.0  # how often the sweep runs
    slack: float = 10.0  # on top: a busy machine, a sweep that skipped a locked row

    @property
    def overdue(self) -> timedelta:
        return timedelta(seconds=2 * self.sweep_interval + self.slack)

    @property
    def silent(self) -> timedelta:
        return timedelta(seconds=self.heartbeat_timeout + 2 * self.sweep_interval + self.slack)


@dataclass
class Data:
    now: datetime
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    attempts: dict[str, dict[str, Any]] = field(default_factory=dict)
    deadlines: list[dict[str, Any]] = field(default_factory=list)
    charges: list[dict[str, Any]] | None = None  # None: the example shop is not installed
    refunds: list[dict[str, Any]] = field(default_factory=list)
    stock: list[dict[str, Any]] = field(default_factory=list)
    reservations: list[dict[str, Any]] = field(default_factory=list)
    bookings: list[dict[str, Any]] = field(default_factory=list)
    shipments: list[dict[str, Any]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)
    sweep_failures: list[dict[str, Any]] = field(default_factory=list)
    users: dict[str, str] = field(default_factory=dict)  # id -> username (signal senders)

    def attempts_of(self, instance_id: str) -> list[dict[str, Any]]:
        if not hasattr(self, "_by_instance"):
            grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for attempt in self.attempts.values():
                grouped[attempt["instance_id"]].append(attempt)
            self._by_instance = grouped
        return self._by_instance.get(instance_id, [])


def _rows(cursor: Any, sql: str) -> list[dict[str, Any]]:
    cursor.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _rows_of(cursor: Any, sql: str) -> list[tuple[Any, ...]]:
    cursor.execute(sql)
    return [tuple(row) for row in cursor.fetchall()]


def _tables(connection: Any, cursor: Any) -> set[str]:
    introspection = getattr(connection, "introspection", None)
    if introspection is not None:  # Django's connection: every database it supports
        return set(introspection.table_names(cursor))
    # A bare DB-API connection: PostgreSQL (bench/load.py's psycopg)
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    return {row[0] for row in cursor.fetchall()}


def load(connection: Any, now: datetime | None = None) -> Data:
    """Read what the checks need through a DB-API ``connection`` (no Django needed).

    Constant SQL only: nothing is built from values.
    """
    with connection.cursor() as cursor:
        tables = _tables(connection, cursor)
        data = Data(now=now or datetime.now(UTC))
        for row in _rows(cursor, "SELECT id, workflow, version, status, current_step, "
                                 "CAST(snapshot AS TEXT) AS snapshot, "
                                 "CAST(state AS TEXT) AS state, parent_id, parent_step, revision "
                                 "FROM django_workflows_workflowinstance"):
            row["id"] = _id(row["id"])
            row["parent_id"] = _id(row["parent_id"])
            row["snapshot"] = _json(row["snapshot"]) or {}
            row["state"] = _json(row["state"]) or {}
            data.instances[row["id"]] = row
        events: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in _rows(cursor, "SELECT instance_id, sequence, type, step, revision, "
                                 "CAST(data AS TEXT) AS data, CAST(error AS TEXT) AS error "
                                 "FROM django_workflows_workflowevent "
                                 "ORDER BY instance_id, sequence"):
            row["instance_id"] = _id(row["instance_id"])
            row["data"] = _json(row["data"]) or {}
            row["error"] = _json(row["error"])
            events[row["instance_id"]].append(row)
        data.events = dict(events)
        for row in _rows(cursor, "SELECT token, instance_id, kind, target, status, stop_reason, "
                                 "enqueued_at, claimed_at, heartbeat_at, finished_at, "
                                 "limit_key, limit_max FROM django_workflows_attempt"):
            row["instance_id"] = _id(row["instance_id"])
            for name in ("enqueued_at", "claimed_at", "heartbeat_at", "finished_at"):
                row[name] = _time(row[name])
            data.attempts[row["token"]] = row
        for row in _rows(cursor, "SELECT id, instance_id, kind, token, due_at "
                                 "FROM django_workflows_deadline"):
            row["instance_id"] = _id(row["instance_id"])
            row["due_at"] = _time(row["due_at"])
            data.deadlines.append(row)
        if "django_workflows_sweepfailure" in tables:
            # Every column: "key" is a reserved word to MySQL, and quoting differs.
            for row in _rows(cursor, "SELECT * FROM django_workflows_sweepfailure"):
                row["instance_id"] = _id(row["instance_id"])
                data.sweep_failures.append(row)
        for row in _rows(cursor, "SELECT id, workflow, name, message_id, status, sender_id, "
                                 "sender_name, CAST(taken_by AS TEXT) AS taken_by "
                                 "FROM django_workflows_workflowsignal"):
            row["taken_by"] = _json(row["taken_by"]) or []
            row["sender_id"] = None if row["sender_id"] is None else str(row["sender_id"])
            data.signals.append(row)
        if "auth_user" in tables:
            data.users = {str(pk): name for pk, name in
                          _rows_of(cursor, "SELECT id, username FROM auth_user")}
        if "shop_charge" in tables:
            data.charges = _rows(cursor, "SELECT id, reference, amount_cents, payment_method, "
                                         "status FROM shop_charge")
            data.refunds = _rows(cursor, "SELECT id, charge_id, amount_cents FROM shop_refund")
            data.stock = _rows(cursor, "SELECT sku, on_hand, reserved FROM shop_stockitem")
            data.reservations = _rows(cursor, "SELECT \"order\", item_id, quantity "
                                              "FROM shop_stockreservation")
            data.bookings = _rows(cursor, "SELECT \"order\", status FROM shop_courierbooking")
            data.shipments = _rows(cursor, "SELECT \"order\", status FROM shop_shipment")
    return data


# -- replaying the event log ----------------------------------------------------------------


@dataclass
class Replayed:
    status: str = "idle"
    current_step: str | None = None
    history: list[str] = field(default_factory=list)
    completed_steps: list[str] = field(default_factory=list)
    skipped_steps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _add(items: list[str], item: str | None) -> None:
    if item is not None and item not in items:
        items.append(item)


def replay(events: Iterable[Mapping[str, Any]]) -> Replayed:
    """Where an instance stands according to its event log alone.

    The rules, from the engine's commands (docs/rules.md):

    * ``start``, ``retry``: running.
    * ``step-enter``: running; the step becomes current and is appended to the history.
    * ``step-leave``: the step is completed once the next step is entered or the
      workflow completes (a transition guard that raises fails it first).
    * ``validate``: blocked with errors, running without.
    * ``skip``: running; the step is recorded skipped.
    * ``back``: running; the history's last entry goes, the event's step becomes
      current; neither it nor the step left is completed (unless the history still
      holds an earlier visit of the step left).
    * ``state-update``: a blocked instance runs again.
    * ``operation-blocked``: blocked.
    * ``error``: failed, except a compensation's (``data.item``), which leaves the
      instance rolling back.
    * ``cancel``: cancelled; ``complete``: completed.
    * ``rollback``: rolling back (``phase`` started/resumed); ``finished``: idle
      with no step, no history, nothing completed or skipped.
    * ``resume``, ``compensate`` and the other ``operation-*`` events change none of these.
    """
    r = Replayed()
    leaving: str | None = None  # a step-leave waiting for the move that completes it
    previous_sequence = 0
    for event in events:
        kind, step, data = event["type"], event.get("step") or None, event.get("data") or {}
        sequence = event.get("sequence")
        if sequence is not None:
            if sequence != previous_sequence + 1:
                r.problems.append(f"event #{sequence} follows #{previous_sequence}")
            previous_sequence = sequence
        if kind in ("step-enter", "complete") and leaving is not None:
            _add(r.completed_steps, leaving)
            leaving = None
        if kind == "start" or kind == "retry":
            r.status = "running"
        elif kind == "step-enter":
            r.status, r.current_step = "running", step
            r.history.append(step or "")
        elif kind == "step-leave":
            leaving = step
        elif kind == "validate":
            r.status = "blocked" if data.get("errors") else "running"
        elif kind == "skip":
            r.status = "running"
            _add(r.skipped_steps, step)
        elif kind == "back":
            if len(r.history) < 2 or r.history[-2] != step:
                r.problems.append(f"back to {step!r} with history {r.history}")
            left = r.current_step
            r.status, r.current_step = "running", step
            r.history = r.history[:-1]
            r.completed_steps = [s for s in r.completed_steps if s != step
                                 and (s != left or s in r.history[:-1])]
        elif kind == "state-update":
            if r.status == "blocked":
                r.status = "running"
        elif kind == "operation-blocked":
            r.status = "blocked"
        elif kind == "error":
            leaving = None
            if "item" not in data:
                r.status = "failed"
        elif kind == "cancel":
            r.status = "cancelled"
        elif kind == "complete":
            r.status = "completed"
        elif kind == "rollback":
            if data.get("phase") == "finished":
                r.status, r.current_step = "idle", None
                r.history, r.completed_steps, r.skipped_steps = [], [], []
            else:
                r.status = "rolling-back"
        elif kind not in KNOWN_EVENTS:
            r.problems.append(f"unknown event type {kind!r}")
    return r


def check_history(data: Data) -> list[str]:
    """Every instance's event log, replayed, gives its stored snapshot."""
    violations = []
    for instance_id, row in data.instances.items():
        r = replay(data.events.get(instance_id, ()))
        snapshot = row["snapshot"]
        where = f"{row['workflow']} {instance_id}"
        stored = {
            "status": row["status"],
            "current_step": row["current_step"] or None,
            "history": list(snapshot.get("history") or []),
            "completed_steps": list(snapshot.get("completed_steps") or []),
            "skipped_steps": list(snapshot.get("skipped_steps") or []),
        }
        replayed = {"status": r.status, "current_step": r.current_step, "history": r.history,
                    "completed_steps": r.completed_steps, "skipped_steps": r.skipped_steps}
        for name, value in stored.items():
            if replayed[name] != value:
                violations.append(f"{where}: {name} is {value!r}, its events say "
                                  f"{replayed[name]!r}")
        violations.extend(f"{where}: {problem}" for problem in r.problems)
        violations.extend(f"{where}: {gap}" for gap in revision_gaps(
            row["revision"], data.events.get(instance_id, ())))
    return violations


def revision_gaps(revision: int, events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Revisions of an instance (after the first, its creation) that have no event."""
    with_events = {event["revision"] for event in events if "revision" in event}
    missing = sorted(set(range(2, revision + 1)) - with_events)
    if not missing:
        return []
    return [f"revision{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
            f"of {revision} {'have' if len(missing) > 1 else 'has'} no event"]


# -- background work ---------------------------------------------------------------------


def _live(attempt: Mapping[str, Any] | None, data: Data, limits: Limits) -> bool:
    """An attempt that may still report: queued, or running with a recent heartbeat."""
    if attempt is None or attempt["status"] not in LIVE_ATTEMPT:
        return False
    if attempt["status"] in ("queued", "waiting"):  # waiting: for a slot (check_limits)
        return True
    beat = attempt["heartbeat_at"]
    return beat is not None and data.now - beat <= limits.silent


def check_live_work(data: Data, limits: Limits) -> list[str]:
    """Nothing in flight without a live attempt; nothing running that nobody watches."""
    violations = []
    due_tokens = {(d["token"], d["kind"]) for d in data.deadlines}
    for instance_id, row in data.instances.items():
        snapshot, where = row["snapshot"], f"{row['workflow']} {instance_id}"
        stopping = snapshot.get("stopping") or []
        resuming = {s.get("target") for s in stopping if s.get("resume")}
        for op in snapshot.get("operations") or []:
            status, token = op.get("status"), op.get("token")
            if status in IN_FLIGHT and not _live(data.attempts.get(token or ""), data, limits):
                attempt = data.attempts.get(token or "")
                violations.append(f"{where}: operation {op.get('id')} is {status} but its "
                                  f"attempt is {attempt['status'] if attempt else 'missing'}")
            if status == "waiting" and (token, "retry") not in due_tokens \
                    and op.get("id") not in resuming:
                violations.append(f"{where}: operation {op.get('id')} waits for a retry that "
                                  "nothing will start (no deadline, no stopping attempt)")
        for branch in snapshot.get("parallel") or []:
            if branch.get("status") == "running" and not _live(
                    data.attempts.get(branch.get("token") or ""), data, limits):
                violations.append(f"{where}: branch {branch.get('step')}:{branch.get('id')} "
                                  "runs without a live attempt")
        plan = snapshot.get("rollback") or {}
        for item in plan.get("items") or []:
            if item.get("status") == "running" and item.get("kind") != "nested" and not _live(
                    data.attempts.get(item.get("token") or ""), data, limits):
                violations.append(f"{where}: compensation {item.get('kind')}:"
                                  f"{item.get('target')} runs without a live attempt")
        for entry in stopping:
            attempt = data.attempts.get(entry.get("token") or "")
            if attempt is None or attempt["status"] != "running":
                violations.append(f"{where}: waits for attempt {entry.get('token')} to stop, "
                                  f"but it is {attempt['status'] if attempt else 'missing'}")
    for token, attempt in data.attempts.items():
        beat = attempt["heartbeat_at"]
        if attempt["status"] == "running" and (beat is None or data.now - beat > limits.silent):
            violations.append(f"attempt {token} ({attempt['kind']} {attempt['target']}) is "
                              "running with no heartbeat, and the sweep did not interrupt it")
    return violations


def check_deadlines(data: Data, limits: Limits) -> list[str]:
    """No deadline left unfired, no step past its timeout, no retry delay over unnoticed."""
    violations = []
    set_aside = {failure["key"] for failure in data.sweep_failures
                 if failure["kind"] == "deadline"}
    for deadline in data.deadlines:
        late = data.now - deadline["due_at"]
        if str(deadline["id"]) in set_aside:
            continue  # the sweep recorded why it cannot fire it: it waits to be tried again
        if late > limits.overdue and deadline["instance_id"] in data.instances:
            row = data.instances[deadline["instance_id"]]
            violations.append(f"{row['workflow']} {deadline['instance_id']}: {deadline['kind']} "
                              f"deadline overdue by {late.total_seconds():.0f}s")
    slack = limits.overdue.total_seconds()
    now = data.now.timestamp()
    for instance_id, row in data.instances.items():
        snapshot, where = row["snapshot"], f"{row['workflow']} {instance_id}"
        run = snapshot.get("step_run") or {}
        if row["status"] == "running" and run.get("deadline") and now - run["deadline"] > slack:
            violations.append(f"{where}: step {run.get('step')} is {now - run['deadline']:.0f}s "
                              "past its timeout and still running")
        for op in snapshot.get("operations") or []:
            retry_at = op.get("retry_at")
            if op.get("status") == "waiting" and retry_at and now - retry_at > slack:
                violations.append(f"{where}: operation {op.get('id')} should have been retried "
                                  f"{now - retry_at:.0f}s ago")
    return violations


# -- the example shop's outside effects -------------------------------------------------------


def _settled(data: Data, instance_id: str) -> bool:
    row = data.instances[instance_id]
    return row["status"] in SETTLED and not any(
        a["status"] in LIVE_ATTEMPT for a in data.attempts_of(instance_id))


def _rolled_back_payment(data: Data, instance_id: str) -> bool:
    return any(e["type"] == "compensate" and e["data"].get("item")
               == f"operation:{CHARGE_OPERATION}" for e in data.events.get(instance_id, ()))


def _rolled_back(data: Data, instance_id: str) -> bool:
    events = data.events.get(instance_id, ())
    return bool(events) and data.instances[instance_id]["status"] == "idle" and any(
        e["type"] == "rollback" and e["data"].get("phase") == "finished" for e in events)


def check_payments(data: Data) -> list[str]:
    """Charges match successful payments; refunds match rolled-back payments."""
    if data.charges is None:
        return []
    violations = []
    refunds_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for refund in data.refunds:
        refunds_of[refund["charge_id"]].append(refund)
    charges_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for charge in data.charges:
        charges_of[_id(charge["reference"]) or ""].append(charge)
        refunds = refunds_of.get(charge["id"], [])
        if len(refunds) > 1:
            violations.append(f"charge {charge['id']} refunded {len(refunds)} times")
        for refund in refunds:
            if refund["amount_cents"] != charge["amount_cents"]:
                violations.append(f"refund {refund['id']} of {refund['amount_cents']} for "
                                  f"charge {charge['id']} of {charge['amount_cents']}")
    for reference, charges in charges_of.items():
        money = [c for c in charges if c["status"] != "declined"]
        row = data.instances.get(reference)
        if len(money) > 1:
            violations.append(f"order {reference} charged {len(money)} times: "
                              f"{sorted(c['id'] for c in money)}")
        if row is None:
            if any(c["id"] not in refunds_of for c in money):
                violations.append(f"charge for order {reference}, which does not exist")
            continue
        refunded = [c["id"] for c in charges if c["id"] in refunds_of]
        if refunded and not _rolled_back_payment(data, reference) \
                and row["status"] != "rolling-back":  # its record may be on the way (below)
            violations.append(f"order {reference}: refunds {refunded} but its payment was never "
                              "rolled back")
    for instance_id, row in data.instances.items():
        # Mid-rollback the provider may be ahead of the record (a refund made by a worker
        # that died before reporting it); a rollback that never ends is counted as lost.
        if row["workflow"] != ORDER_WORKFLOW or row["status"] == "rolling-back":
            continue
        op = next((o for o in row["snapshot"].get("operations") or []
                   if o.get("id") == CHARGE_OPERATION), None)
        paid = op is not None and op.get("status") == "succeeded"
        kept = [c for c in charges_of.get(instance_id, [])
                if c["status"] != "declined" and c["id"] not in refunds_of]
        if paid:
            charge_id = (op.get("result") or {}).get("charge")
            if [c["id"] for c in kept] != [charge_id]:
                violations.append(f"order {instance_id}: paid with charge {charge_id}, but the "
                                  f"provider keeps {[c['id'] for c in kept]}")
        elif kept and row["status"] in FINAL and _settled(data, instance_id):
            # A failed, blocked or cancelled order may hold a charge until someone retries
            # it (the charge is found again) or rolls it back (refunded): not yet final.
            violations.append(f"order {instance_id} ({row['status']}) holds no successful "
                              f"payment, but was charged: {[c['id'] for c in kept]}")
    return violations


def check_stock(data: Data) -> list[str]:
    """Reservations add up; a rolled-back order holds nothing."""
    if data.charges is None:
        return []
    violations = []
    reserved: Counter[str] = Counter()
    for reservation in data.reservations:
        reserved[reservation["item_id"]] += reservation["quantity"]
    for item in data.stock:
        if item["reserved"] != reserved[item["sku"]]:
            violations.append(f"stock {item['sku']}: reserved {item['reserved']}, reservations "
                              f"add up to {reserved[item['sku']]}")
        if item["reserved"] > item["on_hand"]:
            violations.append(f"stock {item['sku']}: {item['reserved']} reserved of "
                              f"{item['on_hand']} on hand")
    held: dict[str, list[str]] = defaultdict(list)
    for reservation in data.reservations:
        held[_id(reservation["order"]) or ""].append(f"stock {reservation['item_id']}")
    for booking in data.bookings:
        if booking["status"] == "booked":
            held[_id(booking["order"]) or ""].append("a courier")
    for shipment in data.shipments:
        if shipment["status"] == "shipped":
            held[_id(shipment["order"]) or ""].append("a shipment")
    for instance_id, things in held.items():
        if instance_id in data.instances and _rolled_back(data, instance_id) \
                and _settled(data, instance_id):
            violations.append(f"order {instance_id} was rolled back but still holds "
                              f"{', '.join(things)}")
    return violations


def check_acknowledged(data: Data, seen: Mapping[str, int]) -> list[str]:
    """Each instance a client was told about exists, at least at the revision it saw."""
    violations = []
    for instance_id, revision in seen.items():
        row = data.instances.get(_id(instance_id) or "")
        if row is None:
            violations.append(f"instance {instance_id} was acknowledged to a client (revision "
                              f"{revision}) and is gone")
        elif row["revision"] < revision:
            violations.append(f"instance {instance_id} is at revision {row['revision']}, a "
                              f"client was shown {revision}")
    return violations


def most_at_once(spans: Iterable[tuple[Any, Any]]) -> int:
    """The most of ``spans`` (start, end) that overlap at any moment."""
    edges = sorted(edge for start, end in spans for edge in ((start, 1), (end, -1)))
    running = most = 0
    for _, step in edges:  # at a tie an end (-1) sorts first: touching spans do not overlap
        running += step
        most = max(most, running)
    return most


def check_limits(data: Data, limits: Limits) -> list[str]:
    """Limits per key held: never more running than ``max``; no waiting with room."""
    violations = []
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for attempt in data.attempts.values():
        if attempt.get("limit_key"):
            by_key[attempt["limit_key"]].append(attempt)
    for key, attempts in by_key.items():
        most_allowed = max(a["limit_max"] or 1 for a in attempts)
        spans = [(a["claimed_at"], a["finished_at"] or data.now) for a in attempts
                 if a["claimed_at"] is not None]
        if (most := most_at_once(spans)) > most_allowed:
            violations.append(f"{most} attempts of key {key} ran at once; its max is "
                              f"{most_allowed}")
        taken = sum(a["status"] in ("queued", "running") for a in attempts)
        # The key has had room since its last attempt ended, or its oldest waited if later.
        room_since = max([a["finished_at"] for a in attempts if a["finished_at"]]
                         + [min((a["enqueued_at"] for a in attempts
                                 if a["status"] == "waiting"), default=data.now)])
        for a in attempts:
            if a["status"] == "waiting" and taken < (a["limit_max"] or 1) \
                    and data.now - room_since > limits.overdue:
                violations.append(f"attempt {a['token']} waits for a slot of {key}, which "
                                  f"has had room ({taken} of {a['limit_max']} taken)")
    return violations


# -- all together ----------------------------------------------------------------------------

def check_signals(data: Data, refused_senders: Iterable[str] = ()) -> list[str]:
    """No signal of a refused sender (by username) was recorded or taken; each signal
    recorded as taken was taken by the instances its row names."""
    violations = []
    refused = set(refused_senders)
    for signal in data.signals:
        name = signal["sender_name"] or data.users.get(signal["sender_id"] or "", "")
        if name in refused:
            violations.append(f'signal {signal["id"]} ({signal["name"]}) of refused sender '
                              f'"{name}" was recorded ({signal["status"]})')
        if signal["status"] == "taken" and signal["message_id"] is not None:
            for instance_id in signal["taken_by"]:
                events = data.events.get(instance_id, [])
                if instance_id in data.instances and not any(
                        e["type"] == "signal" and e["data"].get("message_id")
                        == signal["message_id"] for e in events):
                    violations.append(f'signal {signal["id"]} says instance {instance_id} '
                                      "took it, and its events do not")
    for instance_id, events in data.events.items():
        for event in events:
            sender = event["data"].get("sender") if event["type"] == "signal" else None
            if sender is not None and data.users.get(str(sender)) in refused:
                violations.append(f"instance {instance_id} took a signal of refused sender "
                                  f'"{data.users[str(sender)]}" (event {event["sequence"]})')
    return violations


def check_all(data: Data, limits: Limits, *, seen: Mapping[str, int] | None = None,
              refused_senders: Iterable[str] = ()) -> dict[str, list[str]]:
    """Every check's violations by name (an empty list: it holds)."""
    results = {
        "history": check_history(data),
        "live_work": check_live_work(data, limits),
        "deadlines": check_deadlines(data, limits),
        "payments": check_payments(data),
        "stock": check_stock(data),
        "limits": check_limits(data, limits),
        "signals": check_signals(data, refused_senders),
    }
    if seen is not None:
        results["acknowledged"] = check_acknowledged(data, seen)
    return results


def unsettled(data: Data) -> list[str]:
    """Root instances still moving on their own (work in flight, or rolling back)."""
    return [i for i, row in data.instances.items()
            if row["parent_id"] is None and not _settled(data, i)
            and (row["status"] in ("running", "rolling-back") and (
                any(a["status"] in LIVE_ATTEMPT for a in data.attempts_of(i))
                or any(o.get("status") in (*IN_FLIGHT, "waiting")
                       for o in row["snapshot"].get("operations") or [])
                or row["status"] == "rolling-back"))]


def waiting_for_retry(data: Data, instance_id: str) -> bool:
    """Nothing runs, and the work in flight waits for a retry delay a deadline will end.

    Such an instance is not stuck, only slow: a charge whose provider failed four times
    in a row waits 32 s before its fifth attempt (check_deadlines says when one is late).
    """
    row = data.instances[instance_id]
    retries = {d["token"] for d in data.deadlines
               if d["instance_id"] == instance_id and d["kind"] == "retry"}
    in_flight = [o for o in row["snapshot"].get("operations") or []
                 if o.get("status") in (*IN_FLIGHT, "waiting")]
    return (row["status"] == "running" and bool(in_flight)
            and not any(a["status"] in LIVE_ATTEMPT for a in data.attempts_of(instance_id))
            and all(o.get("status") == "waiting" and o.get("token") in retries
                    for o in in_flight))


def describe(data: Data, instance_id: str) -> dict[str, Any]:
    """What an operator would look at first: where the instance is and what its work does."""
    row = data.instances[instance_id]
    snapshot = row["snapshot"]

    def age(moment: datetime | None) -> float | None:
        return None if moment is None else round((data.now - moment).total_seconds(), 1)

    return {
        "id": instance_id, "workflow": row["workflow"], "status": row["status"],
        "current_step": row["current_step"], "revision": row["revision"],
        "operations": [{k: o.get(k) for k in ("id", "status", "attempt", "token")}
                       for o in snapshot.get("operations") or []],
        "parallel": [{k: b.get(k) for k in ("id", "status", "token")}
                     for b in snapshot.get("parallel") or []],
        "attempts": [{"token": a["token"], "kind": a["kind"], "target": a["target"],
                      "status": a["status"], "stop_reason": a["stop_reason"],
                      "enqueued_s_ago": age(a["enqueued_at"]),
                      "heartbeat_s_ago": age(a["heartbeat_at"])}
                     for a in data.attempts_of(instance_id)],
        "deadlines": [{"kind": d["kind"], "due_in_s": -(age(d["due_at"]) or 0)}
                      for d in data.deadlines if d["instance_id"] == instance_id],
        "last_events": [f"{e['type']} {e['step'] or ''}".strip()
                        for e in data.events.get(instance_id, [])[-10:]],
    }


def summary(data: Data) -> dict[str, Any]:
    by_status: Counter[str] = Counter()
    for row in data.instances.values():
        by_status[f"{row['workflow']}/{row['status']}"] += 1
    attempts: Counter[str] = Counter(a["status"] for a in data.attempts.values())
    return {"instances": len(data.instances),
            "events": sum(len(e) for e in data.events.values()),
            "by_status": dict(sorted(by_status.items())), "attempts": dict(attempts),
            "charges": len(data.charges or []), "refunds": len(data.refunds),
            "signals": dict(Counter(s["status"] for s in data.signals)),
            "sweep_failures": [{key: str(value) for key, value in f.items()}
                               for f in data.sweep_failures[:10]]}
