"""The load harness's clients: browser-like sessions against the API, the scenarios
they play, the operator on call, and what they measure (``bench/load.py``)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from bench.load_services import log

PASSWORD = "load-test-password"
KEYED_COMMANDS = 0.5  # the share of commands sent with an Idempotency-Key


# -- measurements ------------------------------------------------------------------------------


@dataclass
class Sample:
    at: float  # seconds since the load started
    endpoint: str
    status: int  # 0: no answer (connection refused or reset)
    seconds: float


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: list[Sample] = []
        self.seen: dict[str, int] = {}  # instance id -> highest revision a client was shown
        self.failed_for_good: list[str] = []  # requests still failing after every retry
        self.leaks: list[str] = []  # another user's instance answered something but 404
        self.unexpected: Counter[str] = Counter()
        self.started = time.monotonic()

    def record(self, endpoint: str, status: int, seconds: float) -> None:
        with self.lock:
            self.samples.append(Sample(time.monotonic() - self.started, endpoint, status,
                                       seconds))

    def saw(self, body: Any) -> None:
        if isinstance(body, dict) and "id" in body and "revision" in body:
            with self.lock:
                key = str(body["id"])
                self.seen[key] = max(self.seen.get(key, 0), int(body["revision"]))


@dataclass
class Fault:
    kind: str
    started: float  # seconds since the load started
    ended: float
    detail: str = ""


# -- clients ---------------------------------------------------------------------------------


class Client:
    """One user's browser-like session against the API."""

    def __init__(self, base: str, username: str, stats: Stats) -> None:
        self.base, self.username, self.stats = base, username, stats
        self.session = requests.Session()
        self.rng = random.Random()
        self.login()

    def login(self) -> None:
        for attempt in range(5):
            self.session.cookies.clear()
            started = time.monotonic()
            try:
                self.session.get(f"{self.base}/accounts/login/", timeout=30)
                token = self.session.cookies.get("csrftoken", "")
                answer = self.session.post(f"{self.base}/accounts/login/", timeout=60,
                                           allow_redirects=False,
                                           data={"username": self.username,
                                                 "password": PASSWORD,
                                                 "csrfmiddlewaretoken": token})
                status = answer.status_code
            except requests.RequestException:
                status = 0
            self.stats.record("login", status, time.monotonic() - started)
            if status == 302:
                return
            time.sleep(0.5 * 2 ** attempt)
        raise RuntimeError(f"{self.username} could not log in ({status})")

    def call(self, method: str, path: str, endpoint: str, body: Any = None,
             expect: tuple[int, ...] = ()) -> tuple[int, Any]:
        """A request, retried (with the same Idempotency-Key) on a 5xx or no answer.

        Half the commands go without a key, as many clients send them: on PostgreSQL those
        that call no user code are written in one statement, the others under the lock,
        so the faults meet both. A keyless command retried after a lost answer may be
        applied twice, as it would for such a client; the invariants hold either way."""
        headers = {}
        if method != "GET":
            headers["X-CSRFToken"] = self.session.cookies.get("csrftoken", "")
        if method == "POST" and (endpoint == "create" or self.rng.random() < KEYED_COMMANDS):
            headers["Idempotency-Key"] = uuid.uuid4().hex
        status, data = 0, None
        for attempt in range(5):
            started = time.monotonic()
            try:
                answer = self.session.request(method, f"{self.base}{path}", json=body,
                                              headers=headers, timeout=60)
                status = answer.status_code
                try:
                    data = answer.json()
                except ValueError:
                    data = answer.text[:200]
            except requests.RequestException as error:
                status, data = 0, str(error)
            self.stats.record(endpoint, status, time.monotonic() - started)
            if status and status < 500:
                break
            time.sleep(0.5 * 2 ** attempt)
        if status == 0 or status >= 500:
            with self.stats.lock:
                self.stats.failed_for_good.append(f"{method} {path}: {status} {data!r:.200}")
        elif status < 300:
            self.stats.saw(data)
        elif status not in expect:
            with self.stats.lock:
                self.stats.unexpected[f"{endpoint} {status}"] += 1
        return status, data

    # shorthands
    def create(self, workflow: str, state: dict[str, Any] | None = None) -> dict[str, Any] | None:
        body: dict[str, Any] = {"workflow": workflow, "start": True}
        if state is not None:
            body["state"] = state
        status, data = self.call("POST", "/api/instances/", "create", body)
        return data if status == 201 else None

    def get(self, pk: str) -> dict[str, Any] | None:
        status, data = self.call("GET", f"/api/instances/{pk}/", "get")
        return data if status == 200 else None

    def act(self, pk: str, action: str, expect: tuple[int, ...] = (409,)
            ) -> tuple[int, Any]:
        return self.call("POST", f"/api/instances/{pk}/{action}/", action, {}, expect=expect)

    def patch(self, pk: str, state: dict[str, Any]) -> tuple[int, Any]:
        return self.call("PATCH", f"/api/instances/{pk}/state/", "state", {"state": state},
                         expect=(409,))

    def decide(self, pk: str, decision: dict[str, Any]) -> tuple[int, Any]:
        """Complete the open task of instance ``pk`` (as the task's page or the API does)."""
        status, data = self.call("GET", f"/api/tasks/?instance={pk}", "tasks")
        open_tasks = data.get("results", []) if status == 200 else []
        if not open_tasks:
            return status, data
        return self.call("POST", f"/api/tasks/{open_tasks[0]['id']}/complete/", "complete",
                         {"input": decision}, expect=(409,))

    def wait_for(self, pk: str, done: Callable[[dict[str, Any]], bool], seconds: float,
                 stop: threading.Event) -> dict[str, Any] | None:
        deadline = time.monotonic() + seconds
        data = None
        while time.monotonic() < deadline and not stop.is_set():
            data = self.get(pk)
            if data is not None and done(data):
                return data
            stop.wait(0.4)
        return data


ORDER_ITEMS = [("mug", 900), ("tee", 1500), ("cap", 1200), ("sticker", 200)]


def order_state(rng: random.Random, number: int, card: str) -> dict[str, Any]:
    items = [{"sku": sku, "quantity": rng.randint(1, 4)}
             for sku, _price in rng.sample(ORDER_ITEMS, rng.randint(1, 3))]
    return {"order_number": f"L-{number}", "customer": {"name": "Load", "email": "l@ex.com"},
            "items": items, "payment_method": card, "currency": "EUR",
            "address": {"country": rng.choice(["DE", "FR", "NL", "GB", "US"])}}


class Scenarios:
    def __init__(self, client: Client, operator: Client, rng: random.Random,
                 stop: threading.Event, others: list[str]) -> None:
        self.c, self.op, self.rng, self.stop = client, operator, rng, stop
        self.others = others  # ids of other users' instances, for the probes
        self.number = 0

    def run_one(self) -> None:
        roll = self.rng.random()
        if roll < 0.40:
            self.order()
        elif roll < 0.75:
            self.onboarding()
        elif roll < 0.90:
            self.expense()
        else:
            self.reads()

    def remember(self, data: dict[str, Any] | None) -> None:
        if data is not None and len(self.others) < 500:
            self.others.append(str(data["id"]))

    def order(self) -> None:
        self.number += 1
        roll = self.rng.random()
        # Declined cards get fixed by a state update; slow ones give the kills a target.
        card = ("pm_card_declined" if roll < 0.1 else "pm_card_slow" if roll < 0.25
                else "pm_card_ok")
        state = order_state(self.rng, self.number, card)
        data = self.c.create("order-fulfilment", state)
        if data is None:
            return
        pk = data["id"]
        self.remember(data)
        if self.rng.random() < 0.15:  # the customer changes their mind
            self.stop.wait(self.rng.uniform(0.1, 1.5))
            status, _ = self.c.act(pk, "cancel")
            if status == 200:
                self.rollback(pk)
            return
        finished = ("completed", "failed", "blocked", "cancelled")
        data = self.c.wait_for(pk, lambda d: d["status"] in finished, 20, self.stop)
        if data and data["status"] == "blocked":  # declined: another card
            self.c.patch(pk, {**state, "payment_method": "pm_card_ok"})
            data = self.c.wait_for(pk, lambda d: d["status"] in finished, 20, self.stop)
        if data and data["status"] == "completed" and self.rng.random() < 0.1:
            self.rollback(pk)  # returned: refund it

    def rollback(self, pk: str) -> None:
        """The back office rolls the order back (a customer may not: the example's
        ``order_permission``), once the stopped work has stopped (refused until then)."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not self.stop.is_set():
            status, data = self.op.act(pk, "rollback")
            code = data.get("code") if isinstance(data, dict) else None
            if status == 200 or code not in ("still_stopping", "work_in_progress", "busy"):
                return
            self.stop.wait(0.5)

    def onboarding(self) -> None:
        data = self.c.create("onboarding")
        if data is None:
            return
        pk = data["id"]
        self.remember(data)
        rng = self.rng
        invite = rng.random() < 0.3
        state = {"name": f"User {rng.randint(1, 10**6)}", "email": "u@example.com",
                 "invite_code": "FRIEND-PRO" if invite else "", "plan": None,
                 "accept_terms": False}
        if rng.random() < 0.3:
            self.c.act(pk, "next")  # nothing filled in yet: 409 validation_failed, blocked
        self.c.patch(pk, state)
        status, data = self.c.act(pk, "next")
        if status != 200:
            return
        if data["current_step"] == "plan":
            if rng.random() < 0.3:
                self.c.act(pk, "back")
                self.c.act(pk, "next")
            if rng.random() < 0.5:
                state = {**state, "plan": rng.choice(["starter", "pro", "team"])}
                self.c.patch(pk, state)
                status, data = self.c.act(pk, "next")
            else:
                status, data = self.c.act(pk, "skip")
            if status != 200:
                return
        if rng.random() < 0.08:
            self.c.act(pk, "cancel")
            return
        child = (data.get("nested") or {}).get("id")
        if data["current_step"] != "identity" or not child:
            return
        document = {"document_type": "passport", "document_number": "AB123456"}
        self.c.patch(child, document)
        status, data = self.c.act(pk, "next")  # the child: document -> review
        if status != 200:
            return
        # An operator approves the document (its review task); the parent moves on to
        # "confirm" by itself.
        self.op.decide(child, {"decision": "approved"})
        data = self.c.wait_for(pk, lambda d: d["current_step"] == "confirm", 5, self.stop)
        if not data or data["current_step"] != "confirm":
            return
        self.c.patch(pk, {**state, "accept_terms": True})
        self.c.act(pk, "next")

    def expense(self) -> None:
        amount = round(self.rng.uniform(5, 20), 2)
        data = self.c.create("expense-approval", {
            "employee": self.c.username, "amount": amount, "currency": "EUR",
            "category": "meals", "description": "Lunch with a customer", "receipt": None})
        if data is None:
            return
        pk = data["id"]
        self.remember(data)
        status, data = self.c.act(pk, "next")  # claim -> approval
        if status != 200:
            return
        if self.rng.random() < 0.5:
            self.c.act(pk, "cancel")
        else:
            self.op.decide(pk, {"decision": "approved"})  # approval -> payout (an operation)

    def reads(self) -> None:
        self.c.call("GET", "/api/instances/?page_size=20", "list")
        self.c.call("GET", "/api/instances/?status=running&workflow=order-fulfilment", "list")
        if self.others:
            pk = self.rng.choice(self.others)
            self.c.call("GET", f"/api/instances/{pk}/events/", "events", expect=(404,))
            self.probe(self.rng.choice(self.others))

    def probe(self, pk: str) -> None:
        """Another user's instance (or one's own): one's own answers 200, others' 404."""
        status, data = self.c.call("GET", f"/api/instances/{pk}/", "probe", expect=(404,))
        if status == 200 and isinstance(data, dict):
            owner_mine = pk in self.mine
            if not owner_mine:
                with self.c.stats.lock:
                    self.c.stats.leaks.append(f"{self.c.username} read {pk}")

    @property
    def mine(self) -> set[str]:
        return getattr(self, "_mine", set())


class Operator(threading.Thread):
    """The person on call: retries failed instances, finishes and resumes rollbacks."""

    def __init__(self, client: Client, stop: threading.Event) -> None:
        super().__init__(name="operator", daemon=True)
        self.c, self.stop = client, stop
        self.retries: Counter[str] = Counter()
        self.rollbacks: Counter[str] = Counter()
        self.last_try: dict[str, float] = {}

    def due(self, pk: str, every: float = 3.0) -> bool:
        now = time.monotonic()
        if now - self.last_try.get(pk, 0) < every:
            return False
        self.last_try[pk] = now
        return True

    def listing(self, query: str) -> list[dict[str, Any]]:
        status, data = self.c.call("GET", f"/api/instances/?page_size=200&{query}", "list")
        return data.get("results", []) if status == 200 and isinstance(data, dict) else []

    def tick(self) -> None:
        for row in self.listing("status=failed"):
            pk = row["id"]
            if self.retries[pk] < 8 and self.due(pk):
                self.retries[pk] += 1
                self.c.act(pk, "retry")
        for row in self.listing("status=cancelled&workflow=order-fulfilment"):
            # A cancelled order may have been charged: undo it (refund, release stock).
            pk = row["id"]
            if row.get("operations") and self.rollbacks[pk] < 20 and self.due(pk):
                self.rollbacks[pk] += 1
                self.c.act(pk, "rollback")
        for row in self.listing("status=rolling-back"):
            pk = row["id"]
            if row.get("errors") and self.rollbacks[pk] < 20 and self.due(pk):
                self.rollbacks[pk] += 1
                self.c.act(pk, "rollback")  # resumes at the first unfinished compensation

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.tick()
            except Exception as error:  # keep going: the next tick may do better
                log(f"operator: {error!r}")
            self.stop.wait(1.0)
