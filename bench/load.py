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
event logs, and probes of other users' instances (which must answer 404). Half
their commands carry an ``Idempotency-Key`` (run under the lock), half do not
(on PostgreSQL, written in one statement when they call no user code).
An operator thread plays the person on call: it retries failed instances and
resumes or finishes rollbacks, as the docs tell operators to.

Faults, in the same run: ``kill -9`` of a worker at random intervals (one
running an attempt), one restart of PostgreSQL, and (Redis
broker) a stop of Redis that loses its queue, then a start. A **refused sender**
(``load-refused``: the change permission on instances, but the order's permission rule
refuses it ``"signal"``) sends ``payment-confirmed`` to the clients' orders by id and by
correlation all along: every one must answer 403 and leave nothing behind (invariant
``signals``). A **poisoned row**, an instance of a workflow no deploy has any longer
with a deadline due, is put in the database at 45 %: the sweep must set it aside with
its error while every other deadline fires (invariant ``deadlines``). Halfway through,
``manage.py workflows_purge`` deletes pre-seeded finished instances while the
load runs; its cost is the latency of the requests served meanwhile.

After the load the harness drains (the operator goes on until nothing is in
flight, bounded), then checks the invariants of ``bench/invariants.py`` on the
database, and reports requests per second, p50/p99 latency per endpoint,
statuses, faults injected and survived, work hit and recovered, and what was
lost. The exit status is 1 when an invariant breaks, something was lost, a
request failed for good, or the server answered a 5xx other than the API's
503 ``database_unavailable`` while PostgreSQL restarts.

This file holds one run (set up, load, faults, purge, drain, verdict); the
private services and processes are in ``load_services.py``, the clients and
their scenarios in ``load_clients.py``, the printed report in ``load_report.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import invariants  # noqa: E402
from bench.calibration import calibration_line  # noqa: E402
from bench.load_clients import (  # noqa: E402
    ORDER_ITEMS,
    PASSWORD,
    Client,
    Fault,
    Operator,
    Sample,
    Scenarios,
    Stats,
    order_state,
)
from bench.load_report import judge, percentile, print_report, server_error_traces  # noqa: E402
from bench.load_services import (  # noqa: E402
    Postgres,
    Process,
    Redis,
    children_of,
    free_port,
    log,
    private_postgres,
    wait_until,
)

PY = sys.executable
ARTIFACTS = ROOT / "artifacts" / "load"
OPERATOR = "load-operator"
FAULTS_USER = "load-faults"  # places the slow orders whose workers the injector kills
REFUSED = "load-refused"  # sends signals the order's permission rule refuses
RETIRED = "retired-flow"  # the workflow of the poisoned row: registered nowhere
INTERRUPTED = "Workflow work was interrupted and must be retried"
PLANT_AHEAD = 3.0  # seconds before a kill is due that a kill target may be placed
PLANT_AGAIN = 4.0  # seconds after which a target that never became killable is replaced
SETTLE = 2.0  # seconds after an outage before the next kill


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
        # The first kill falls before the PostgreSQL restart at 10.5 s, after which the
        # ORM broker's pusher stalls for 10 s (django-q2 sleeps, then is restarted).
        return cls(brokers=brokers, clients=6, seconds=30.0, drain_seconds=40.0,
                   kill_every=(5.0, 8.0), redis_down=5.0, seed_finished=3_000, mode="short")

    @classmethod
    def full(cls, brokers: list[str]) -> Config:
        return cls(brokers=brokers, clients=12, mode="full")


# -- one run -----------------------------------------------------------------------------------


SEED_EVENTS = [("start", ""), ("step-enter", "payment"), ("validate", "payment"),
               ("step-leave", "payment"), ("step-enter", "preparation"),
               ("validate", "preparation"), ("step-leave", "preparation"),
               ("step-enter", "shipment"), ("validate", "shipment"), ("step-leave", "shipment"),
               ("step-enter", "completion"), ("validate", "completion"),
               ("step-leave", "completion"), ("complete", "completion")]
STEPS = ["payment", "preparation", "shipment", "completion"]

SETUP = """
from django.contrib.auth.models import Permission, User
from example_project.shop.models import StockItem
User.objects.create_superuser("{operator}", "op@example.com", "{password}")
User.objects.create_user("{faults_user}", "faults@example.com", "{password}")
refused = User.objects.create_user("{refused}", "refused@example.com", "{password}")
refused.user_permissions.add(Permission.objects.get(codename="change_workflowinstance"))
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
        self.refused_answers: Counter[int] = Counter()  # the refused sender's, by status
        self.poisoned: tuple[str, int] | None = None  # its instance and deadline
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
                                                refused=REFUSED, password=PASSWORD,
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

    def busy_workers(self) -> list[int]:
        """Workers inside a slow attempt: the only ones the injector kills.

        Only busy workers: an idle django-q2 worker waits in the task queue's ``get()``
        holding the queue's read lock, and killed there it takes the lock with it, so
        every other worker waits for ever (a cluster restart is the cure). That is
        multiprocessing's, not this library's, and it is reported in the README. Our
        attempt rows lag behind a worker whose task just failed (a database restart
        ends many at once), so a worker counts as busy only while django-q2's title for
        it (``setproctitle``) still names the attempt.
        """
        cluster = self.processes["qcluster"]
        titles: dict[int, str] = {}
        for sentinel in children_of(cluster.pid):
            for pid in children_of(sentinel):
                with contextlib.suppress(OSError):
                    titles[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().decode(
                        errors="replace")
        busy = []
        # Running for over a second with a fresh heartbeat: a slow charge (pm_card_slow,
        # seconds left), not one about to finish, nor a row whose finish a restart lost.
        with contextlib.suppress(Exception), self.pg.connect(self.database) as conn:
            for name, token in conn.execute(
                    "SELECT worker, token FROM django_workflows_attempt "
                    "WHERE status = 'running' AND claimed_at < now() - interval '1 second' "
                    "AND heartbeat_at > now() - interval '1.5 seconds'"):
                pid = int(name.rsplit(":", 1)[-1]) if name else 0
                if f"processing workflow attempt {token}" in titles.get(pid, ""):
                    busy.append(pid)
        return busy

    def inject(self, stop: threading.Event) -> None:
        c = self.config
        pg_at = c.seconds * 0.35
        poison_at: float | None = c.seconds * 0.45
        redis_at = c.seconds * 0.7 if self.redis is not None else None
        next_kill = self.rng.uniform(*c.kill_every)
        planted_at: float | None = None
        quiet_until = 0.0  # no kill while the tasks an outage broke are still ending
        while not stop.is_set():
            now = self.now()
            if pg_at is not None and now >= pg_at:
                started = self.now()
                self.pg.restart()
                self.faults.append(Fault("postgres-restart", started, self.now()))
                log(f"{self.broker}: restarted PostgreSQL in {self.now() - started:.1f}s")
                pg_at, quiet_until = None, self.now() + SETTLE
            elif poison_at is not None and now >= poison_at:
                started = self.now()
                self.poison()
                assert self.poisoned is not None
                self.faults.append(Fault("poisoned-row", started, self.now(),
                                         f"instance {self.poisoned[0]} of workflow "
                                         f'"{RETIRED}", deadline {self.poisoned[1]} due'))
                poison_at = None
            elif redis_at is not None and now >= redis_at and self.redis is not None:
                started = self.now()
                self.redis.stop()
                stop.wait(c.redis_down)
                self.redis.start()
                self.faults.append(Fault("redis-stop-start", started, self.now(),
                                         f"down {self.now() - started:.1f}s, queue lost"))
                log(f"{self.broker}: Redis was down {self.now() - started:.1f}s")
                redis_at, quiet_until = None, self.now() + SETTLE
            elif now >= next_kill - PLANT_AHEAD:
                busy = self.busy_workers()
                if busy and now >= max(next_kill, quiet_until):
                    victim = self.rng.choice(busy)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(victim, signal.SIGKILL)
                    self.faults.append(Fault("kill-9-worker", self.now(), self.now(),
                                             f"pid {victim}, running an attempt"))
                    next_kill = now + self.rng.uniform(*c.kill_every)
                    planted_at = None
                elif not busy and (planted_at is None or now - planted_at > PLANT_AGAIN):
                    # No worker is busy with a slow charge: place one shortly before the
                    # kill is due, so every kill hits real work instead of waiting on the
                    # clients' luck (again if its charge failed at once and waits a retry).
                    self.plant_target()
                    planted_at = now
            stop.wait(0.2)

    def poison(self) -> None:
        """An instance of a workflow a deploy removed, with a timer due now: rows as the
        library wrote them, whose workflow no process knows any longer."""
        snapshot = json.dumps({"history": ["wait"], "completed_steps": [], "skipped_steps": [],
                               "errors": [], "operations": [], "parallel": []})
        with self.pg.connect(self.database) as conn:
            instance = conn.execute(
                "INSERT INTO django_workflows_workflowinstance (id, workflow, version, status, "
                "state, current_step, snapshot, parent_step, revision, last_event, created_at, "
                "updated_at, started_at) VALUES (gen_random_uuid(), %s, 1, 'running', "
                "'{}'::jsonb, 'wait', %s::jsonb, '', 1, 3, now(), now(), now()) RETURNING id",
                [RETIRED, snapshot]).fetchone()[0]
            conn.execute(
                "INSERT INTO django_workflows_workflowevent (instance_id, sequence, type, step, "
                "revision, data, created_at) VALUES (%s, 1, 'start', '', 1, '{}', now()), "
                "(%s, 2, 'step-enter', 'wait', 1, '{}', now()), "
                "(%s, 3, 'timer-wait', 'wait', 1, '{}', now())", [instance] * 3)
            deadline = conn.execute(
                "INSERT INTO django_workflows_deadline (instance_id, kind, token, due_at) "
                "VALUES (%s, 'timer', 'poisoned', now() - interval '1 second') RETURNING id",
                [instance]).fetchone()[0]
        self.poisoned = (str(instance), int(deadline))
        log(f"{self.broker}: poisoned row: instance {instance} of {RETIRED}, deadline due")

    def send_refused(self, stop: threading.Event) -> None:
        """The refused sender, all along: each of its signals must answer 403."""
        client = Client(self.base, REFUSED, self.stats)
        rng = random.Random(self.config.seed + 7)
        while not stop.wait(rng.uniform(0.3, 1.0)):
            ids = list(self.stats.seen)
            address = {"instance": rng.choice(ids)} if ids and rng.random() < 0.7 \
                else {"correlation": f"ch_{rng.randrange(10**6)}"}
            status, _ = client.call("POST", "/api/signals/", "refused", {
                "workflow": "order-fulfilment", "signal": "payment-confirmed",
                "payload": {"charge": "ch_forged", "amount_cents": 1, "currency": "EUR"},
                "message_id": f"refused-{uuid.uuid4().hex}", **address}, expect=(403,))
            with self.stats.lock:
                self.refused_answers[status] += 1

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
        refuser = threading.Thread(target=self.send_refused, args=(faults_stop,), daemon=True)
        for thread in threads:
            thread.start()
        operator.start()
        if c.faults:
            injector.start()
            refuser.start()
            started = self.now()
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
            refuser.join(timeout=60)
            answers = dict(sorted(self.refused_answers.items()))
            self.faults.append(Fault("refused-sender", started, self.now(),
                                     f"{sum(answers.values())} signals sent, answered {answers}"))
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
        results = invariants.check_all(data, limits, seen=seen, refused_senders={REFUSED})
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
            faults.append({**asdict(fault), "survived": after > 0 and self.held(fault, data),
                           "completed_after": after})
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

    def held(self, fault: Fault, data: invariants.Data) -> bool:
        """What a fault must leave, besides completions after it: the refused sender was
        answered 403 every time (and ``signals`` holds), the poisoned row's deadline was
        set aside by the sweep with its error, the others fired (``deadlines`` holds)."""
        if fault.kind == "refused-sender":
            return set(self.refused_answers) == {403}
        if fault.kind == "poisoned-row" and self.poisoned is not None:
            return any(f["kind"] == "deadline" and f["key"] == str(self.poisoned[1])
                       and RETIRED in f["error"] for f in data.sweep_failures)
        return True

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
                "server_error_traces": server_error_traces(self.processes["web"].log())
                if outside else [],
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
    if config.faults and importlib.util.find_spec("setproctitle") is None:
        # Without worker titles no worker can be told busy: no kill would ever happen.
        raise SystemExit("bench/load.py kills workers only with setproctitle installed "
                         "(pip install -e '.[test]'), or run it with --no-faults")

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
              "logs": str(logs), "cores": os.cpu_count(), "calibration": calibration_line()}
    (logs / "report.json").write_text(json.dumps(report, indent=2, default=str))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    print_report(report)
    print(f"total {report['seconds']:.0f}s; {report['calibration']}; report in "
          f"{logs / 'report.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
