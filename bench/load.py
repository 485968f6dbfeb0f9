#!/usr/bin/env python
"""Load and faults: the example site on PostgreSQL with django-q2, driven over HTTP.

    .venv/bin/python bench/load.py              # full: Redis broker, then ORM broker (~13 min)
    .venv/bin/python bench/load.py --short      # short: the same, smaller (under 3 min)
    .venv/bin/python bench/load.py --broker orm --clients 8 --seconds 120 --no-faults

For each broker the harness starts its own services and processes, all on
127.0.0.1, in process groups of their own, and ends them all:

* a private PostgreSQL cluster (``initdb`` in a temporary directory, run as the
  ``postgres`` user when we are root) and a private ``redis-server``, so that
  restarting them disturbs nobody else's database or queue;
* the example site (``bench/settings_load.py``) under gunicorn (2 processes x 8
  threads), a ``manage.py qcluster`` (4 workers) and a ``workflows_sweep --loop``.

N clients (threads, one user each, logged in with a session and sending the
CSRF token, as the wizard page does) then create and drive instances through
the REST API: the onboarding wizard (validation errors, back, skip, the
nested identity check an operator approves), orders (a declined card fixed by
a state update, cancels followed by a rollback, refunds of shipped orders),
expense claims (cancelled, or approved and paid out), reads of lists and
event logs, and probes of other users' instances (which must answer 404).
An operator thread plays the person on call: it retries failed instances and
resumes or finishes rollbacks, as the docs tell operators to.

Faults, in the same run: ``kill -9`` of a worker at random intervals (one
running an attempt), one restart of PostgreSQL, and (Redis
broker) a stop of Redis that loses its queue, then a start. Halfway through,
``manage.py workflows_purge`` deletes pre-seeded finished instances while the
load runs; its cost is the latency of the requests served meanwhile.

After the load the harness drains (the operator goes on until nothing is in
flight, bounded), then checks the invariants of ``bench/invariants.py`` on the
database, and reports requests per second, p50/p99 latency per endpoint,
statuses, faults injected and survived, work hit and recovered, and what was
lost. The exit status is 1 when an invariant breaks, something was lost, a
request failed for good, or the server answered a 5xx other than the API's
503 ``database_unavailable`` while PostgreSQL restarts.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import invariants  # noqa: E402

PY = sys.executable
ARTIFACTS = ROOT / "artifacts" / "load"
PASSWORD = "load-test-password"
OPERATOR = "load-operator"
FAULTS_USER = "load-faults"  # places the slow orders whose workers the injector kills
INTERRUPTED = "Workflow work was interrupted and must be retried"


@dataclass
class Config:
    brokers: list[str]
    clients: int = 8
    seconds: float = 240.0
    max_requests: int = 200_000
    drain_seconds: float = 90.0
    faults: bool = True
    kill_every: tuple[float, float] = (8.0, 16.0)  # seconds between worker kills
    redis_down: float = 8.0  # seconds Redis stays stopped
    seed_finished: int = 20_000  # old finished instances for the purge to delete
    workers: int = 4
    web_processes: int = 2
    web_threads: int = 8
    heartbeat_timeout: float = 6.0
    redispatch_after: float = 10.0
    sweep_interval: float = 0.5
    seed: int = 1
    keep: bool = False
    mode: str = "custom"

    @classmethod
    def short(cls, brokers: list[str]) -> Config:
        return cls(brokers=brokers, clients=6, seconds=30.0, drain_seconds=40.0,
                   kill_every=(6.0, 10.0), redis_down=5.0, seed_finished=3_000, mode="short")

    @classmethod
    def full(cls, brokers: list[str]) -> Config:
        return cls(brokers=brokers, clients=12, mode="full")


# -- small helpers ---------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Process:
    """A child in a process group of its own, its output in a log file."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> None:
        self.name, self.args, self.env = name, args, env
        self.log_path = logs / f"{name}.log"
        self.restarts = 0
        self.popen: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        with self.log_path.open("ab") as out:
            self.popen = subprocess.Popen(self.args, env=self.env, cwd=ROOT, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 15.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)  # the main process stops its children
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)  # whatever is left of the group
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            found.append(int(stat.split("/")[2]))
    return found


# -- private services ----------------------------------------------------------------------


class Postgres:
    """A PostgreSQL cluster of our own: restarting it disturbs nobody else."""

    def __init__(self, workdir: Path) -> None:
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        pg_ctl = binaries[-1] if binaries else shutil.which("pg_ctl")
        if not pg_ctl:
            raise SystemExit("bench/load.py needs PostgreSQL's server binaries (initdb, pg_ctl)")
        self.bin = Path(pg_ctl).parent
        self.dir = workdir / "postgres"
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *args: str, timeout: float = 120) -> None:
        subprocess.run([*self.as_user, *args], check=True, timeout=timeout, cwd="/",
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def init(self) -> None:
        self.dir.mkdir(parents=True)
        if self.as_user:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U",
                  "postgres", "--no-sync", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                       f"unix_socket_directories = '{self.dir}'\nmax_connections = 200\n"
                       "shared_buffers = 128MB\nlog_min_messages = warning\n")
        self.start()

    def pg_ctl(self, *args: str) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.dir / "server.log"), "-w", "-t", "60", *args)

    def start(self) -> None:
        self.pg_ctl("start")

    def restart(self) -> None:
        self.pg_ctl("-m", "fast", "restart")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.pg_ctl("-m", "fast", "stop")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres", **options: Any) -> psycopg.Connection:
        return psycopg.connect(self.url(database), connect_timeout=5, **options)


class Redis:
    """A redis-server of our own, without persistence: a stop loses its queue."""

    def __init__(self, workdir: Path) -> None:
        if not shutil.which("redis-server"):
            raise SystemExit("bench/load.py needs redis-server for the Redis broker")
        self.port = free_port()
        self.logs = workdir
        self.process: Process | None = None

    def start(self) -> None:
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", str(self.logs)]
        self.process = Process("redis", args, dict(os.environ), self.logs)
        wait_until(self.ping, 15, "Redis to answer")

    def ping(self) -> bool:
        import redis

        return bool(redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping())

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=5)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


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
        """A request, retried (with the same Idempotency-Key) on a 5xx or no answer."""
        headers = {}
        if method != "GET":
            headers["X-CSRFToken"] = self.session.cookies.get("csrftoken", "")
        if method == "POST":
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
    items = [{"sku": sku, "quantity": rng.randint(1, 4), "price_cents": price}
             for sku, price in rng.sample(ORDER_ITEMS, rng.randint(1, 3))]
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
        """Roll back once the stopped work has stopped (refused until then)."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not self.stop.is_set():
            status, data = self.c.act(pk, "rollback")
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
        document = {"document_type": "passport", "document_number": "AB123456",
                    "decision": None, "reason": ""}
        self.c.patch(child, document)
        status, data = self.c.act(pk, "next")  # the child: document -> review
        if status != 200:
            return
        # An operator approves the document; the parent moves on to "confirm" by itself.
        self.op.patch(child, {**document, "decision": "approved"})
        self.op.act(child, "next")
        data = self.c.wait_for(pk, lambda d: d["current_step"] == "confirm", 5, self.stop)
        if not data or data["current_step"] != "confirm":
            return
        self.c.patch(pk, {**state, "accept_terms": True})
        self.c.act(pk, "next")

    def expense(self) -> None:
        amount = round(self.rng.uniform(5, 20), 2)
        data = self.c.create("expense-approval", {
            "employee": self.c.username, "amount": amount, "currency": "EUR",
            "category": "meals", "description": "Lunch with a customer", "receipt": None,
            "decision": None, "comment": ""})
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
            self.op.patch(pk, {**data["state"], "decision": "approved"})
            self.op.act(pk, "next")  # approval -> payout (an operation)

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


# -- one run -----------------------------------------------------------------------------------


SEED_EVENTS = [("start", ""), ("step-enter", "payment"), ("validate", "payment"),
               ("step-leave", "payment"), ("step-enter", "preparation"),
               ("validate", "preparation"), ("step-leave", "preparation"),
               ("step-enter", "shipment"), ("validate", "shipment"), ("step-leave", "shipment"),
               ("step-enter", "completion"), ("validate", "completion"),
               ("step-leave", "completion"), ("complete", "completion")]
STEPS = ["payment", "preparation", "shipment", "completion"]

SETUP = """
from django.contrib.auth.models import User
from example_project.shop.models import StockItem
User.objects.create_superuser("{operator}", "op@example.com", "{password}")
User.objects.create_user("{faults_user}", "faults@example.com", "{password}")
for n in range({clients}):
    User.objects.create_user(f"load-{{n}}", f"load-{{n}}@example.com", "{password}")
for sku, price in {items!r}:
    StockItem.objects.create(sku=sku, name=sku, price_cents=price, on_hand=10**7)
"""


class Run:
    """One broker's run: services, site, load, faults, purge, drain, invariants."""

    def __init__(self, config: Config, broker: str, workdir: Path, pg: Postgres,
                 logs: Path) -> None:
        self.config, self.broker, self.workdir, self.pg = config, broker, workdir, pg
        self.logs = logs / broker
        self.logs.mkdir(parents=True, exist_ok=True)
        self.database = f"dwf_load_{broker}"
        self.redis = Redis(self.logs) if broker == "redis" else None
        self.processes: dict[str, Process] = {}
        self.stats = Stats()
        self.faults: list[Fault] = []
        self.targets = 0  # slow orders the injector placed to have a worker to kill
        self.target_client: Client | None = None
        self.deaths: list[str] = []
        self.purge: dict[str, Any] = {}
        self.rng = random.Random(config.seed)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    # -- setting up --------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        c = self.config
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings_load",
               "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
               "DWF_DEMO_DATABASE_URL": self.pg.url(self.database),
               "DWF_DEMO_BROKER": self.broker, "DWF_LOAD_QUEUE": f"dwf-load-{self.broker}",
               "DWF_LOAD_WORKERS": str(c.workers),
               "DWF_LOAD_HEARTBEAT_TIMEOUT": str(c.heartbeat_timeout),
               "DWF_LOAD_REDISPATCH_AFTER": str(c.redispatch_after),
               "DWF_LOAD_SWEEP_INTERVAL": str(c.sweep_interval),
               # The fake provider: some requests fail (retried), some answers are lost
               # (the retry must find the first charge), the bank confirms in 0.5 s.
               "SHOP_PAYMENT_FAILURE_RATE": "0.2", "SHOP_PAYMENT_LOST_RESPONSE_RATE": "0.05",
               "SHOP_PAYMENT_LATENCY": "0.5", "SHOP_PAYMENT_SLOW_LATENCY": "5"}
        if self.redis is not None:
            env["DWF_DEMO_REDIS_URL"] = self.redis.url
        for name in ("DATABASE_URL", "DWF_DEMO_DB"):
            env.pop(name, None)
        return env

    def manage(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run([PY, "manage.py", *args], env=self.env(), cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n"
                               f"{done.stderr}")
        return done.stdout

    def setup(self, template: str) -> None:
        with self.pg.connect(autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}"')
            conn.execute(f'CREATE DATABASE "{self.database}" TEMPLATE "{template}"')
        self.manage("shell", "-c", SETUP.format(operator=OPERATOR, faults_user=FAULTS_USER,
                                                password=PASSWORD,
                                                clients=self.config.clients,
                                                items=ORDER_ITEMS))
        self.seed_finished(self.config.seed_finished)
        if self.redis is not None:
            self.redis.start()

    def seed_finished(self, count: int) -> None:
        """Orders finished 100 days ago, with their event logs: what the purge deletes."""
        snapshot = json.dumps({"history": STEPS, "completed_steps": STEPS, "skipped_steps": [],
                               "errors": [], "operations": [], "parallel": []})
        values = ", ".join(f"({n}, '{kind}', '{step}')"
                           for n, (kind, step) in enumerate(SEED_EVENTS, 1))
        with self.pg.connect(self.database) as conn:
            conn.execute(
                "INSERT INTO django_workflows_workflowinstance (id, workflow, version, status, "
                "state, current_step, snapshot, parent_step, revision, last_event, created_at, "
                "updated_at, started_at, completed_at) "
                "SELECT gen_random_uuid(), 'order-fulfilment', 1, 'completed', "
                "'{\"seeded\": true}'::jsonb, 'completion', %s::jsonb, '', 2, %s, "
                "now() - interval '100 days', now() - interval '99 days', "
                "now() - interval '100 days', now() - interval '99 days' "
                "FROM generate_series(1, %s)", [snapshot, len(SEED_EVENTS), count])
            conn.execute(
                "INSERT INTO django_workflows_workflowevent (instance_id, sequence, type, step, "
                "revision, data, created_at) "
                "SELECT i.id, e.n, e.kind, e.step, 2, "
                "CASE WHEN e.kind = 'validate' THEN '{\"errors\": []}'::jsonb "
                "ELSE '{}'::jsonb END, i.completed_at "
                f"FROM django_workflows_workflowinstance i, (VALUES {values}) AS e(n, kind, step) "
                "WHERE i.state ? 'seeded'")

    def start_site(self) -> None:
        c, env = self.config, self.env()
        self.processes["web"] = Process("web", [
            PY, "-m", "gunicorn", "example_project.wsgi:application", "--bind",
            f"127.0.0.1:{self.port}", "--worker-class", "gthread", "--workers",
            str(c.web_processes), "--threads", str(c.web_threads), "--timeout", "120",
            "--graceful-timeout", "10", "--keep-alive", "30", "--log-level", "warning"],
            env, self.logs)
        self.processes["qcluster"] = Process("qcluster", [PY, "manage.py", "qcluster"], env,
                                             self.logs)
        self.processes["sweeper"] = Process("sweeper", [
            PY, "manage.py", "workflows_sweep", "--loop", "--interval",
            str(c.sweep_interval)], env, self.logs)
        wait_until(lambda: requests.get(f"{self.base}/accounts/login/", timeout=5).ok, 60,
                   "the site to answer")
        wait_until(lambda: "running" in self.processes["qcluster"].log(), 60,
                   "the cluster to start")

    def supervise(self) -> None:
        """As systemd would: a process that died is started again (and reported)."""
        for name, process in self.processes.items():
            if not process.alive():
                code = process.popen.returncode if process.popen else None
                self.deaths.append(f"{name} exited ({code}) at "
                                   f"{time.monotonic() - self.stats.started:.0f}s")
                log(f"{self.broker}: {name} exited with {code}; starting it again")
                process.restarts += 1
                process.start()

    # -- faults -------------------------------------------------------------------------------

    def now(self) -> float:
        return time.monotonic() - self.stats.started

    def kill_worker(self) -> str | None:
        """``kill -9`` a worker that is running an attempt; None when none is.

        Only busy workers: an idle django-q2 worker waits in the task queue's ``get()``
        holding the queue's read lock, and killed there it takes the lock with it, so
        every other worker waits for ever (a cluster restart is the cure). That is
        multiprocessing's, not this library's, and it is reported in the README.
        """
        cluster = self.processes["qcluster"]
        workers: list[int] = []
        for sentinel in children_of(cluster.pid):
            workers.extend(children_of(sentinel))
        busy = []
        # Running for over a second with a fresh heartbeat: a slow charge (pm_card_slow,
        # seconds left), not one about to finish, nor a row whose finish a restart lost.
        with contextlib.suppress(Exception), self.pg.connect(self.database) as conn:
            for (name,) in conn.execute(
                    "SELECT worker FROM django_workflows_attempt WHERE status = 'running' "
                    "AND claimed_at < now() - interval '1 second' "
                    "AND heartbeat_at > now() - interval '1.5 seconds'"):
                pid = int(name.rsplit(":", 1)[-1]) if name else 0
                if pid in workers:
                    busy.append(pid)
        if not busy:
            return None
        victim = self.rng.choice(busy)
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
        return f"pid {victim}, running an attempt"

    def inject(self, stop: threading.Event) -> None:
        c = self.config
        pg_at = c.seconds * 0.35
        redis_at = c.seconds * 0.7 if self.redis is not None else None
        next_kill = self.rng.uniform(*c.kill_every)
        planted_at: float | None = None
        while not stop.is_set():
            now = self.now()
            if pg_at is not None and now >= pg_at:
                started = self.now()
                self.pg.restart()
                self.faults.append(Fault("postgres-restart", started, self.now()))
                log(f"{self.broker}: restarted PostgreSQL in {self.now() - started:.1f}s")
                pg_at = None
            elif redis_at is not None and now >= redis_at and self.redis is not None:
                started = self.now()
                self.redis.stop()
                stop.wait(c.redis_down)
                self.redis.start()
                self.faults.append(Fault("redis-stop-start", started, self.now(),
                                         f"down {self.now() - started:.1f}s, queue lost"))
                log(f"{self.broker}: Redis was down {self.now() - started:.1f}s")
                redis_at = None
            elif now >= next_kill:
                victim = self.kill_worker()
                if victim:
                    self.faults.append(Fault("kill-9-worker", self.now(), self.now(), victim))
                    next_kill = now + self.rng.uniform(*c.kill_every)
                    planted_at = None
                elif planted_at is None or now - planted_at > 10:
                    # No worker is busy with a slow charge: place one, so every kill due
                    # hits real work instead of waiting on the clients' luck.
                    self.plant_target()
                    planted_at = now
            stop.wait(0.2)

    def plant_target(self) -> None:
        if self.target_client is None:
            return
        self.targets += 1
        state = order_state(self.rng, self.targets, "pm_card_slow")
        self.target_client.create("order-fulfilment", {**state, "order_number":
                                                       f"F-{self.targets}"})

    # -- purge under load ---------------------------------------------------------------------

    def run_purge(self) -> None:
        started = self.now()
        begun = time.monotonic()
        output = self.manage("workflows_purge", "--older-than", "30", "--batch-size", "500")
        seconds = time.monotonic() - begun
        found = re.search(r"Deleted (\d+) finished instances in (\d+) batches", output)
        deleted = int(found.group(1)) if found else 0
        self.purge = {"started": started, "ended": self.now(), "seconds": round(seconds, 2),
                      "deleted": deleted, "batches": int(found.group(2)) if found else 0,
                      "per_second": round(deleted / seconds, 1) if seconds else 0.0}
        log(f"{self.broker}: purged {deleted} instances in {seconds:.1f}s under load")

    # -- the load ----------------------------------------------------------------------------

    def drive(self) -> Operator:
        c = self.config
        stop = threading.Event()
        load_over = threading.Event()
        # Every session logs in before the clock starts (a login is a slow password hash).
        operator = Operator(Client(self.base, OPERATOR, self.stats), load_over)
        sessions = [(Client(self.base, f"load-{n}", self.stats),
                     Client(self.base, OPERATOR, self.stats)) for n in range(c.clients)]
        if c.faults:
            self.target_client = Client(self.base, FAULTS_USER, self.stats)
        others: list[str] = []
        self.stats.started = time.monotonic()
        end = self.stats.started + c.seconds

        def client_loop(n: int) -> None:
            rng = random.Random(c.seed * 1000 + n)
            client, op_client = sessions[n]
            scenarios = Scenarios(client, op_client, rng, stop, others)
            mine: set[str] = set()
            scenarios._mine = mine  # type: ignore[attr-defined]
            while time.monotonic() < end and len(self.stats.samples) < c.max_requests \
                    and not stop.is_set():
                before = set(self.stats.seen)
                try:
                    scenarios.run_one()
                except Exception as error:
                    log(f"client {n}: {error!r}")
                    stop.wait(1)
                mine.update(set(self.stats.seen) - before)

        threads = [threading.Thread(target=client_loop, args=(n,), daemon=True)
                   for n in range(c.clients)]
        faults_stop = threading.Event()
        injector = threading.Thread(target=self.inject, args=(faults_stop,), daemon=True)
        for thread in threads:
            thread.start()
        operator.start()
        if c.faults:
            injector.start()
        purged = False
        while time.monotonic() < end:
            self.supervise()
            if not purged and time.monotonic() - self.stats.started > c.seconds * 0.5:
                purged = True
                threading.Thread(target=self.run_purge, daemon=True).start()
            time.sleep(0.5)
        stop.set()
        faults_stop.set()
        for thread in threads:
            thread.join(timeout=90)
        if c.faults:
            injector.join(timeout=60)
        self.load_seconds = self.now()
        return operator

    def drain(self, operator: Operator) -> float:
        """Let the operator finish what is in flight; bounded."""
        started = time.monotonic()
        deadline = started + self.config.drain_seconds
        while time.monotonic() < deadline:
            self.supervise()
            data = self.read()
            pending = invariants.unsettled(data)
            failed = [i for i, r in data.instances.items()
                      if r["status"] == "failed" and operator.retries[i] < 8]
            if not pending and not failed and not self.purge_running():
                break
            time.sleep(1.0)
        operator.stop.set()
        operator.join(timeout=30)
        return time.monotonic() - started

    def purge_running(self) -> bool:
        return bool(self.config.seed_finished) and not self.purge

    def read(self) -> invariants.Data:
        with self.pg.connect(self.database) as conn:
            return invariants.load(conn)

    # -- the report --------------------------------------------------------------------------

    def outcome(self, operator: Operator, drained: float) -> dict[str, Any]:
        c = self.config
        data = self.read()
        limits = invariants.Limits(heartbeat_timeout=c.heartbeat_timeout,
                                   sweep_interval=c.sweep_interval, slack=10)
        seen = {pk: rev for pk, rev in self.stats.seen.items()}
        results = invariants.check_all(data, limits, seen=seen)
        load_ids = {i for i, r in data.instances.items() if not r["state"].get("seeded")}
        hit = {i for i in load_ids
               if any(e["type"] == "resume" for e in data.events.get(i, ()))}
        good = {"completed", "idle"}
        recovered = {i for i in hit if data.instances[i]["status"] in good}
        still_failed = sorted(i for i in hit if data.instances[i]["status"] == "failed")
        interrupted = sum(1 for a in data.attempts.values() if a["status"] == "interrupted")
        redispatched = sum(int(n) for n in re.findall(
            r"(\d+) attempts handed out again", self.processes["sweeper"].log()))
        unsettled = invariants.unsettled(data)
        # Waiting out a retry delay when the drain ends is slow, not lost.
        waiting = [i for i in unsettled if invariants.waiting_for_retry(data, i)]
        unsettled = [i for i in unsettled if i not in waiting]
        violations = sum(len(v) for v in results.values())
        lost = (len(results.get("acknowledged", [])) + len(results["payments"])
                + len(results["stock"]) + len(still_failed) + len(unsettled))
        completes = self.completion_times()
        faults = []
        for fault in self.faults:
            after = sum(1 for t in completes if t > fault.ended)
            faults.append({**asdict(fault), "survived": after > 0, "completed_after": after})
        return {
            "broker": self.broker, "load_seconds": round(self.load_seconds, 1),
            "drain_seconds": round(drained, 1), "http": self.http_report(),
            "faults": faults, "faults_injected": len(faults),
            "faults_survived": sum(1 for f in faults if f["survived"]),
            "kill_targets_placed": self.targets, "process_deaths": self.deaths,
            "work_hit": {"instances_interrupted": len(hit), "attempts_interrupted": interrupted,
                         "attempts_handed_out_again": redispatched,
                         "operator_retries": sum(operator.retries.values()),
                         "operator_rollbacks": sum(operator.rollbacks.values())},
            "work_recovered": len(recovered),
            "lost": lost, "still_failed_after_interruption": still_failed[:20],
            "unsettled": [invariants.describe(data, i) for i in unsettled[:20]],
            "waiting_for_retry": [invariants.describe(data, i) for i in waiting[:20]],
            "purge": self.purge_report(),
            "invariants": {name: {"violations": len(v), "first": v[:10]}
                           for name, v in results.items()},
            "invariant_violations": violations,
            "database": invariants.summary(data),
        }

    def completion_times(self) -> list[float]:
        """When instances completed, in seconds since the load started."""
        wall_start = time.time() - (time.monotonic() - self.stats.started)
        with self.pg.connect(self.database) as conn:
            rows = conn.execute("SELECT created_at FROM django_workflows_workflowevent "
                                "WHERE type = 'complete' AND created_at > now() - "
                                "interval '1 day'").fetchall()
        return [row[0].timestamp() - wall_start for row in rows]

    def outage_windows(self) -> list[tuple[float, float]]:
        # A restarted database drops the connections in use; allow a few seconds more.
        return [(f.started, f.ended + 3.0) for f in self.faults if f.kind == "postgres-restart"]

    def http_report(self) -> dict[str, Any]:
        samples = self.stats.samples
        during = [s for s in samples if 0 <= s.at <= self.load_seconds]
        by_endpoint: dict[str, list[Sample]] = defaultdict(list)
        for sample in samples:
            by_endpoint[sample.endpoint].append(sample)
        windows = self.outage_windows()
        def in_window(s: Sample) -> bool:
            return any(a <= s.at <= b for a, b in windows)

        # While the database restarts the API answers 503 (database_unavailable) or the
        # connection drops; any other 5xx, or a 503 at any other time, is a failure.
        in_outage = [s for s in samples if s.status in (0, 503) and in_window(s)]
        # No answer at all (a kept-alive connection the server closed as the request went
        # out) is the client's retry to make; a 5xx is the server's failure.
        outside = [s for s in samples if s.status >= 500
                   and not (s.status == 503 and in_window(s))]
        no_answer = [s for s in samples if s.status == 0 and not in_window(s)]
        endpoints = {}
        for name, items in sorted(by_endpoint.items()):
            times = [s.seconds * 1000 for s in items]
            endpoints[name] = {"requests": len(items), "p50_ms": round(percentile(times, 0.5), 1),
                               "p99_ms": round(percentile(times, 0.99), 1),
                               "statuses": dict(Counter(str(s.status) for s in items))}
        return {"requests": len(samples),
                "requests_per_second": round(len(during) / max(self.load_seconds, 1), 1),
                "statuses": dict(Counter(str(s.status) for s in samples)),
                "endpoints": endpoints,
                "unavailable_in_db_outage": len(in_outage),
                "server_errors": len(outside),
                "no_answer_outside_outage": len(no_answer),
                "first_server_errors": [asdict(s) for s in outside[:5]],
                "failed_after_retries": len(self.stats.failed_for_good),
                "first_failed_after_retries": self.stats.failed_for_good[:5],
                "unexpected_statuses": dict(self.stats.unexpected),
                "cross_user_leaks": len(self.stats.leaks)}

    def purge_report(self) -> dict[str, Any]:
        if not self.purge:
            return {}
        a, b = self.purge["started"], self.purge["ended"]
        writes = ("create", "next", "state", "cancel", "rollback", "retry", "back", "skip")

        def window(inside: bool) -> dict[str, Any]:
            chosen = [s for s in self.stats.samples if s.endpoint in writes and s.status
                      and s.at <= self.load_seconds and (a <= s.at <= b) == inside
                      and not any(x <= s.at <= y for x, y in self.outage_windows())]
            times = [s.seconds * 1000 for s in chosen]
            span = (b - a) if inside else max(self.load_seconds - (b - a), 1)
            return {"requests": len(chosen), "per_second": round(len(chosen) / max(span, 0.1), 1),
                    "p50_ms": round(percentile(times, 0.5), 1),
                    "p99_ms": round(percentile(times, 0.99), 1)}

        return {**self.purge, "writes_during_purge": window(True),
                "writes_otherwise": window(False)}

    # -- all of it ---------------------------------------------------------------------------

    def execute(self, template: str) -> dict[str, Any]:
        try:
            log(f"{self.broker}: setting up (database {self.database})")
            self.setup(template)
            self.start_site()
            log(f"{self.broker}: {self.config.clients} clients for {self.config.seconds:.0f}s"
                f"{' with faults' if self.config.faults else ''}")
            operator = self.drive()
            log(f"{self.broker}: load over ({len(self.stats.samples)} requests); draining")
            drained = self.drain(operator)
            result = self.outcome(operator, drained)
            log(f"{self.broker}: {result['invariant_violations']} invariant violations, "
                f"lost {result['lost']}")
            return result
        finally:
            for process in self.processes.values():
                process.stop()
            if self.redis is not None:
                self.redis.stop()


# -- reporting ----------------------------------------------------------------------------------


def print_report(report: dict[str, Any]) -> None:
    for run in report["runs"]:
        http = run["http"]
        print(f"\n=== {run['broker']} broker: {run['load_seconds']:.0f}s of load, "
              f"{http['requests']} requests, {http['requests_per_second']} req/s")
        print(f"{'endpoint':<10} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8}  statuses")
        for name, e in http["endpoints"].items():
            statuses = " ".join(f"{k}:{v}" for k, v in sorted(e["statuses"].items()))
            print(f"{name:<10} {e['requests']:>9} {e['p50_ms']:>8} {e['p99_ms']:>8}  {statuses}")
        print(f"503 or no answer during the database restart: "
              f"{http['unavailable_in_db_outage']} (answered on retry); other 5xx: "
              f"{http['server_errors']}; no answer otherwise: "
              f"{http['no_answer_outside_outage']}; failed after "
              f"retries: {http['failed_after_retries']}; cross-user leaks: "
              f"{http['cross_user_leaks']}")
        if http["unexpected_statuses"]:
            print(f"unexpected statuses: {http['unexpected_statuses']}")
        kinds = Counter(f["kind"] for f in run["faults"])
        print(f"faults injected: {run['faults_injected']} ({dict(kinds)}), survived: "
              f"{run['faults_survived']} ({run['kill_targets_placed']} slow orders placed as "
              f"kill targets); process deaths: {run['process_deaths'] or 'none'}")
        hit = run["work_hit"]
        print(f"work hit: {hit['instances_interrupted']} instances interrupted "
              f"({hit['attempts_interrupted']} attempts), {hit['attempts_handed_out_again']} "
              f"attempts handed out again; recovered: {run['work_recovered']} instances "
              f"(operator: {hit['operator_retries']} retries, {hit['operator_rollbacks']} "
              f"rollbacks); lost: {run['lost']}")
        for row in run["unsettled"]:
            print(f"    unsettled: {json.dumps(row)}")
        for row in run["waiting_for_retry"]:
            print(f"    waiting for a retry delay (not lost): {json.dumps(row)}")
        purge = run["purge"]
        if purge:
            print(f"purge under load: {purge['deleted']} instances in {purge['seconds']}s "
                  f"({purge['per_second']}/s, {purge['batches']} batches); writes during it "
                  f"p50/p99 {purge['writes_during_purge']['p50_ms']}/"
                  f"{purge['writes_during_purge']['p99_ms']} ms at "
                  f"{purge['writes_during_purge']['per_second']}/s, otherwise "
                  f"{purge['writes_otherwise']['p50_ms']}/{purge['writes_otherwise']['p99_ms']} "
                  f"ms at {purge['writes_otherwise']['per_second']}/s")
        for name, result in run["invariants"].items():
            state = "holds" if not result["violations"] else f"{result['violations']} VIOLATED"
            print(f"invariant {name:<13} {state}")
            for line in result["first"]:
                print(f"    {line}")
        db = run["database"]
        print(f"database: {db['instances']} instances, {db['events']} events, "
              f"{db['charges']} charges, {db['refunds']} refunds")
    print(f"\n{'PASS' if report['ok'] else 'FAIL'}: {report['verdict']}")


def judge(runs: list[dict[str, Any]]) -> tuple[bool, str]:
    problems = []
    for run in runs:
        http, b = run["http"], run["broker"]
        if run["invariant_violations"]:
            problems.append(f"{b}: {run['invariant_violations']} invariant violations")
        if run["lost"]:
            problems.append(f"{b}: lost {run['lost']}")
        if http["server_errors"]:
            problems.append(f"{b}: {http['server_errors']} server errors (a 500, or a 503 "
                            "outside the database restart)")
        if http["failed_after_retries"]:
            problems.append(f"{b}: {http['failed_after_retries']} requests failed for good")
        if http["cross_user_leaks"]:
            problems.append(f"{b}: {http['cross_user_leaks']} cross-user reads answered")
        if run["faults_injected"] != run["faults_survived"]:
            problems.append(f"{b}: {run['faults_injected'] - run['faults_survived']} faults "
                            "not survived")
    return not problems, "; ".join(problems) or "every invariant holds, nothing lost"


@contextlib.contextmanager
def private_postgres(workdir: Path) -> Iterator[Postgres]:
    pg = Postgres(workdir)
    pg.init()
    try:
        yield pg
    finally:
        pg.stop()


def migrate_template(pg: Postgres, logs: Path) -> str:
    template = "dwf_load_template"
    with pg.connect(autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{template}"')
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings_load",
           "PYTHONPATH": str(ROOT), "DWF_DEMO_DATABASE_URL": pg.url(template)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([PY, "manage.py", "migrate", "--noinput"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    (logs / "migrate.log").write_text(done.stdout + done.stderr)
    if done.returncode:
        raise RuntimeError(f"migrate failed:\n{done.stdout}\n{done.stderr}")
    return template


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="the CI mode: under 3 minutes")
    parser.add_argument("--broker", choices=["redis", "orm", "both"], default="both")
    parser.add_argument("--clients", type=int)
    parser.add_argument("--seconds", type=float, help="seconds of load per broker")
    parser.add_argument("--max-requests", type=int)
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the report here as well")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    brokers = ["redis", "orm"] if args.broker == "both" else [args.broker]
    config = Config.short(brokers) if args.short else Config.full(brokers)
    for name in ("clients", "seconds", "max_requests"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    config.faults, config.seed, config.keep = not args.no_faults, args.seed, args.keep

    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = ARTIFACTS / f"{stamp}-{os.getpid()}"
    logs.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="dwf-load-"))
    os.chmod(workdir, 0o755)
    started = time.monotonic()
    runs = []
    try:
        with private_postgres(workdir) as pg:
            log(f"private PostgreSQL on 127.0.0.1:{pg.port}; logs in {logs}")
            template = migrate_template(pg, logs)
            for broker in brokers:
                runs.append(Run(config, broker, workdir, pg, logs).execute(template))
    finally:
        if not config.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    ok, verdict = judge(runs)
    report = {"mode": config.mode, "config": {**asdict(config)}, "runs": runs, "ok": ok,
              "verdict": verdict, "seconds": round(time.monotonic() - started, 1),
              "logs": str(logs), "cores": os.cpu_count()}
    (logs / "report.json").write_text(json.dumps(report, indent=2, default=str))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    print_report(report)
    print(f"total {report['seconds']:.0f}s; report in {logs / 'report.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
