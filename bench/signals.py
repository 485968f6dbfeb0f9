#!/usr/bin/env python
"""Signal delivery over HTTP against ``next``, on the same instances, in the same run.

    .venv/bin/python bench/signals.py                        # 1,000 instances a round, 3 rounds
    .venv/bin/python bench/signals.py --instances 300 --rounds 2 --by correlation

It makes a database of its own (as ``bench/operations.py`` does) and serves the REST API
from a real server process: gunicorn (``--web-processes`` x ``--threads``, gthread) with
``bench/settings_signals.py``, clients authenticated with DRF's token as docs/api.md
recommends for scripts. Instances of ``bench-signal`` (bench/opsapp/workflows.py) have a
plain step ``ready``, a step ``wait`` that waits for the signal ``go`` (correlated on the
instance's ``state["key"]``), and ``done``.

In each of ``--rounds`` rounds, ``--instances`` new instances are started (not timed), and
``--clients`` threads, each with a keep-alive connection, send, slice by slice of
``--chunk`` instances (so that the machine's changing load hits both alike):

1. ``POST /api/instances/<id>/next/`` to each of the slice (``ready`` -> ``wait``), then
2. ``POST /api/signals/`` to each of the slice, addressed ``--by`` its id (``instance``), its
   ``reference`` or the value it is correlated on (``correlation``), with a payload and
   a ``message_id`` as a provider's webhook has (``wait`` -> ``done``).

Both are one transition of the same instances under their row lock, through the same
server, a few seconds apart. Every answer is checked (200; the signal ``taken`` and the
instance it names on ``done``), and so is the database in the end. A latency is a request's
time from sending to the answer, which comes once the instance has moved on (committed);
a rate is the requests of a kind over the wall time of its slices; the server's CPU per
request is read from ``/proc``. It prints p50 and p99 of each, and the signal's rate over
``next``'s (the aim: at least 0.8), per round and as the median.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import requests
from django.conf import settings
from django.db import connection

from bench.calibration import calibration_line
from bench.load_services import free_port
from bench.operations import ARTIFACTS, ROOT, database, percentile
from bench.processes import group_cpu
from django_workflows import services
from django_workflows.models import WorkflowInstance

WORKFLOW = "bench-signal"
SETTINGS = "bench.settings_signals"
USER = "bench"


# -- the server ----------------------------------------------------------------------------


def manage(*args: str) -> str:
    """A management command with the server's settings (its apps: the API, authtoken)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "PYTHONPATH": str(ROOT),
           "DJANGO_SUPERUSER_PASSWORD": "not used: the token is"}
    done = subprocess.run([sys.executable, "-m", "django", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise SystemExit(f"manage {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def api_token() -> str:
    """A superuser and the token of DRF's ``authtoken`` it sends: what docs/api.md says."""
    manage("migrate", "--verbosity", "0")
    manage("createsuperuser", "--noinput", "--username", USER, "--email", "bench@example.com")
    return manage("drf_create_token", USER).split()[2]


class Server:
    """gunicorn serving the API, in a process group of its own."""

    def __init__(self, processes: int, threads: int) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = ARTIFACTS / f"bench-signals-gunicorn-{os.getpid()}.log"
        self._log = self.log_path.open("a")
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "PYTHONPATH": str(ROOT)}
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "django.core.wsgi:get_wsgi_application()",
             "--bind", f"127.0.0.1:{self.port}", "--worker-class", "gthread", "--workers",
             str(processes), "--threads", str(threads), "--keep-alive", "30",
             "--log-level", "warning"], env=env, cwd=ROOT, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True)
        limit = time.monotonic() + 60
        while True:
            self.check()
            with suppress(requests.ConnectionError):
                if requests.get(f"{self.url}/api/", timeout=5).status_code in (200, 401):
                    return
            if time.monotonic() > limit:
                raise SystemExit(f"gunicorn did not answer:\n{self.log_path.read_text()}")
            time.sleep(0.2)

    def cpu(self) -> float:
        return group_cpu({self.popen.pid})

    def check(self) -> None:
        if self.popen.poll() is not None:
            raise SystemExit(f"gunicorn exited:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=15)
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=5)
        self._log.close()


@contextmanager
def server(processes: int, threads: int):
    running = Server(processes, threads)
    try:
        yield running
    finally:
        running.stop()


# -- the clients ---------------------------------------------------------------------------


class Clients:
    """``count`` threads, each with a keep-alive session sending the token, for the run."""

    def __init__(self, url: str, token: str, count: int) -> None:
        self.url, self.token, self.count = url, token, count
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(count)

    def session(self) -> requests.Session:
        if not hasattr(self.local, "session"):
            self.local.session = requests.Session()
            self.local.session.headers.update({"Authorization": f"Token {self.token}",
                                               "Accept": "application/json"})
        return self.local.session

    def post(self, path: str, body: Any = None) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        answer = self.session().post(self.url + path, json=body, timeout=60)
        took = time.perf_counter() - started
        if answer.status_code != 200:
            raise SystemExit(f"POST {path} answered {answer.status_code}: {answer.text[:500]}")
        return took, answer.json()

    def all(self, call: Callable[[int], float], numbers: range) -> tuple[float, list[float]]:
        """``call(n)`` for each of ``numbers`` from every thread; the wall time and latencies."""
        started = time.perf_counter()
        latencies = list(self.pool.map(call, numbers))
        return time.perf_counter() - started, latencies


@dataclass
class Phase:
    wall: float
    latencies: list[float]
    cpu: float  # the server's CPU seconds over the phase

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.wall

    @property
    def cpu_ms(self) -> float:
        return self.cpu / len(self.latencies) * 1000


def start(count: int) -> list[tuple[str, str]]:
    """``count`` started instances of ``bench-signal``: (id, key)."""
    made = []
    for _ in range(count):
        key = f"k-{uuid.uuid4().hex}"
        made.append((str(services.create(WORKFLOW, state={"key": key}, reference=key,
                                         start=True).pk), key))
    return made


def round_(clients: Clients, running: Server, count: int, by: str,
           chunk: int) -> tuple[Phase, Phase]:
    made = start(count)

    def next_(n: int) -> float:
        took, answer = clients.post(f"/api/instances/{made[n][0]}/next/")
        if answer["current_step"] != "wait":
            raise SystemExit(f"next moved {made[n][0]} to {answer['current_step']}")
        return took

    def signal_(n: int) -> float:
        id, key = made[n]
        address = {"instance": id} if by == "instance" else {by: key}
        took, answer = clients.post("/api/signals/", {
            "workflow": WORKFLOW, "signal": "go", **address, "payload": {"n": n},
            "message_id": f"evt-{key}"})
        moved = [(i["id"], i["current_step"]) for i in answer["instances"]]
        if answer["signal"]["status"] != "taken" or moved != [(id, "done")]:
            raise SystemExit(f"the signal to {id} answered {answer}")
        return took

    # Taking turns by slices of ``chunk`` instances (``next`` to a slice, then the signal to
    # it), so that the machine's load, which moves from second to second, hits both alike.
    phases = [Phase(0.0, [], 0.0), Phase(0.0, [], 0.0)]
    for first in range(0, count, chunk):
        numbers = range(first, min(first + chunk, count))
        for phase, call in zip(phases, (next_, signal_), strict=True):
            cpu = running.cpu()
            wall, latencies = clients.all(call, numbers)
            running.check()
            phase.wall += wall
            phase.latencies += latencies
            phase.cpu += running.cpu() - cpu
    done = WorkflowInstance.objects.filter(pk__in=[id for id, _ in made],
                                           current_step="done").count()
    if done != count:
        raise SystemExit(f"{count - done} of {count} instances did not move on")
    return phases[0], phases[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1000, help="instances per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4, help="client threads")
    parser.add_argument("--web-processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="threads per web process")
    parser.add_argument("--chunk", type=int, default=100,
                        help="next and the signal take turns by slices of this many instances")
    parser.add_argument("--by", choices=["instance", "reference", "correlation"],
                        default="instance", help="how a signal is addressed")
    options = parser.parse_args()
    load = os.getloadavg()[0]
    print(calibration_line(), flush=True)
    results = []
    with database():
        token = api_token()
        with server(options.web_processes, options.threads) as running:
            clients = Clients(running.url, token, options.clients)
            # Warming up: every thread's connection made, the server's code paths run once.
            round_(clients, running, min(50, options.instances), options.by, options.chunk)
            for number in range(options.rounds):
                nexts, signals = round_(clients, running, options.instances, options.by,
                                        options.chunk)
                results.append((nexts, signals))
                print(f"round {number + 1}: next {nexts.rate:.0f}/s, signal "
                      f"{signals.rate:.0f}/s ({signals.rate / nexts.rate:.2f}); p50 "
                      f"{percentile(nexts.latencies, 0.5) * 1000:.1f} / "
                      f"{percentile(signals.latencies, 0.5) * 1000:.1f} ms", flush=True)
            clients.pool.shutdown()
    nexts_all = [x for nexts, _ in results for x in nexts.latencies]
    signals_all = [x for _, signals in results for x in signals.latencies]
    ratios = [signals.rate / nexts.rate for nexts, signals in results]
    print(f"\n{options.rounds} rounds of {options.instances} instances, {options.clients} "
          f"clients, gunicorn {options.web_processes} x {options.threads} threads, signals "
          f"by {options.by}, PostgreSQL {connection.pg_version // 10000}, Django's "
          f"{settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}; load average "
          f"{load:.1f} before and {os.getloadavg()[0]:.1f} after\n")
    print("| over HTTP | requests/s (median of rounds) | p50 | p99 | server CPU per request |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, phases, latencies in (
            ("`POST /api/instances/<id>/next/`", [n for n, _ in results], nexts_all),
            ("`POST /api/signals/`", [s for _, s in results], signals_all)):
        print(f"| {name} | {statistics.median(p.rate for p in phases):.0f} | "
              f"{percentile(latencies, 0.5) * 1000:.1f} ms | "
              f"{percentile(latencies, 0.99) * 1000:.1f} ms | "
              f"{statistics.median(p.cpu_ms for p in phases):.1f} ms |")
    print(f"\nsignal / next: {statistics.median(ratios):.2f} (rounds: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; the aim: at least 0.8)")


if __name__ == "__main__":
    main()
