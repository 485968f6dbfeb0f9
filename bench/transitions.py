#!/usr/bin/env python
"""Cost per transition: the service layer's ``next`` against the raw driver doing the same work.

    .venv/bin/python bench/transitions.py            # PostgreSQL at 127.0.0.1:5432, user postgres
    .venv/bin/python bench/transitions.py --database mysql://root@127.0.0.1:3306/   # MariaDB
    .venv/bin/python bench/transitions.py --seconds 2 --profile
    .venv/bin/python bench/transitions.py --finished 1000000   # flat as the tables grow
    .venv/bin/python bench/transitions.py --padded   # raw at the service's client CPU

``--database`` names the server as a ``DATABASE_URL`` (``postgres://`` or
``mysql://``; its database name is not used). The script creates a database of
its own there (``dwf_bench_<pid>``; ``DWF_BENCH_DB`` names another), migrates it,
and drops it at the end. Four cases, each run for a bounded time by the raw
driver and then by the service layer:

- 1 client or 4 processes (each with its own persistent connection);
- over random instances (200) or over one hot instance that every client moves.

Raw, per transition, through psycopg (PostgreSQL) or mysqlclient (MariaDB/MySQL):
``SELECT * ... FOR UPDATE`` one row, ``UPDATE`` it with its ~1 KB JSON state,
``INSERT`` one event row, ``COMMIT`` -- in copies of our own tables
(``bench/raw_databases.py``). The service: ``services.next`` on a 500-step manual
workflow whose state is ~1 KB.

With ``--finished N`` (PostgreSQL) only the 4-process case over random instances
runs: once with 10,000 finished instances (and their events) in the tables, then
again after filling them up to N; it prints the service's rate at N divided by
its rate at 10,000 (and the raw driver's, whose tables do not grow, as the
measure of how the machine's load changed between the two).

With ``--padded`` only the 1-client case over random instances runs, and then the raw
loop again, beside a raw loop that first spends the service's extra client CPU per
transaction (the service's CPU per transaction less raw's, from the first run) in a busy
loop: what raw's database work gives at the service's client CPU, the most the service's
ratio to raw could be on this machine without spending less CPU. ``--padding MS`` pads by
MS milliseconds instead.

Lock hold is the time from the row lock being granted (the ``SELECT ... FOR
UPDATE`` returning) to the commit having returned: for the service measured by
a query wrapper and an ``on_commit`` callback installed by this script only. A
command the service writes in one statement (PostgreSQL: it calls no user code)
holds the lock inside that statement: its hold is the statement's time.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import multiprocessing as mp
import os
import pstats
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
OWN_DATABASE = not os.environ.get("DWF_BENCH_DB")
if OWN_DATABASE:
    os.environ["DWF_BENCH_DB"] = f"dwf_bench_{os.getpid()}"

from bench.calibration import calibration_line  # noqa: E402
from bench.raw_databases import INSTANCES, RAW_INSTANCES, Server, server_for  # noqa: E402

WORKFLOW = "bench-long-manual"
STEPS = 500  # manual steps: instances never complete during a run
HOT_ROTATE = 100  # a hot instance is replaced by a fresh one after this many steps
HOT_CAPACITY = 100  # fresh hot instances per case: 10,000 transitions before they wrap
STATE = {  # about 1 KB of JSON
    "customer": {"name": "Ada Lovelace", "email": "ada@example.com", "plan": "pro",
                 "address": {"street": "12 Analytical Row", "city": "London",
                             "postcode": "NW1 2AB", "country": "GB"}},
    "items": [{"sku": f"SKU-{i:04d}", "quantity": i % 3 + 1, "price": 9.5 * i}
              for i in range(12)],
    "notes": "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 5,
    "flags": {"newsletter": True, "terms": True, "vip": False},
    "counter": 0,
}


# -- the database ------------------------------------------------------------------------

@functools.cache  # forked workers inherit it
def server() -> Server:
    """The database server of the settings (``--database``)."""
    from django.conf import settings

    return server_for(settings.DATABASES["default"])


def setup_database() -> None:
    import django
    from django.conf import settings
    from django.core.management import call_command

    name = settings.DATABASES["default"]["NAME"]
    if OWN_DATABASE:
        server().create_database(name)
    django.setup()
    register_workflow()
    call_command("migrate", verbosity=0)
    server().copy_tables()


def teardown_database() -> None:
    from django.conf import settings
    from django.db import connections

    connections.close_all()
    name = settings.DATABASES["default"]["NAME"]
    if OWN_DATABASE:
        server().drop_database(name)
    else:
        server().drop_copies()
        server().run(f"DELETE FROM {INSTANCES} WHERE workflow = %s", [WORKFLOW])


def register_workflow() -> None:
    from django_workflows import Step, Transition, Workflow, register, registry

    if registry.find(WORKFLOW) is None:
        register(Workflow(
            id=WORKFLOW, version=1, title="Benchmark: manual steps", initial=STATE,
            steps=[Step(f"s{i}") for i in range(STEPS)],
            transitions=[Transition(f"s{i}", f"s{i + 1}") for i in range(STEPS - 1)]))


def new_instances(count: int) -> list[str]:
    """Started instances of the benchmark workflow, copied (same ids) into the raw table."""
    from django_workflows import services

    ids = [str(services.create(WORKFLOW, start=True).pk) for _ in range(count)]
    server().copy_instances(ids)
    return ids


def table_of(kind: str) -> str:
    return RAW_INSTANCES if kind in ("raw", PADDED) else INSTANCES


def moved(kind: str) -> int:
    """Revisions written so far to the instances of one kind (for a sanity check)."""
    return server().revisions(table_of(kind))


# -- one transition ----------------------------------------------------------------------


def Raw(samples: list[float]) -> Callable[[str], int]:
    """The raw baseline's transition on the settings' database, by the name the peers'
    harness (shared/bench-peers/project_bench.py) calls it, as :class:`Service` is."""
    return server().transition(samples)


PADDED = "raw-padded"


class Padded:
    """The raw transition after ``padding`` seconds of this process's CPU spent in a loop:
    raw's database work at the service's client CPU (``--padded``)."""

    def __init__(self, samples: list[float], padding: float) -> None:
        self.raw: Any = Raw(samples)
        self.padding = padding

    def __call__(self, instance_id: str) -> int:
        until = time.perf_counter() + self.padding
        while time.perf_counter() < until:
            pass
        return self.raw(instance_id)

    def close(self) -> None:
        self.raw.close()


class Service:
    """``services.next``; a query wrapper notes when the row lock was granted.

    The wrapper runs for every statement, so it should cost no more than the raw loop's
    own timing: what a statement is (its SQL read for ``SKIP LOCKED`` and ``FOR UPDATE``)
    is worked out once per SQL string, and the connection is this process's own object,
    not looked up through ``django.db.connection`` at each call.
    """

    def __init__(self, samples: list[float]) -> None:
        from django.db import DEFAULT_DB_ALIAS, connections

        from django_workflows import services

        self.next = services.next
        self.samples = samples
        self.connection = connections[DEFAULT_DB_ALIAS]
        self.kinds: dict[str, tuple[bool, bool]] = {}  # SKIP LOCKED, FOR UPDATE
        self.locked: float | None = None
        self.connection.ensure_connection()
        self.wrapper = self.connection.execute_wrapper(self._timed)
        self.wrapper.__enter__()

    def _timed(self, execute: Callable[..., Any], sql: str, params: Any, many: bool,
               context: Any) -> Any:
        began = time.perf_counter()
        result = execute(sql, params, many, context)
        if self.locked is not None:
            return result
        kind = self.kinds.get(sql)
        if kind is None:
            text = self.text_of(sql)
            kind = self.kinds[sql] = ("SKIP LOCKED" in text, "FOR UPDATE" in text)
        skips_locked, locks = kind
        if skips_locked and not self.connection.in_atomic_block:
            # Written in one statement: the lock was taken and let go while it ran.
            self.samples.append(time.perf_counter() - began)
            self.locked = began
        elif locks:  # the lock, alone or with others at once
            self.locked = time.perf_counter()
            self.connection.on_commit(self._committed)
        return result

    def text_of(self, sql: str) -> str:
        """What ``sql`` runs: a prepared statement's ``EXECUTE`` as the statement it names."""
        from django_workflows.services.sql import statements

        prepared = getattr(statements(), "prepared", None)
        if prepared is None or "EXECUTE dwf_" not in sql:
            return sql
        by_name = {name: text for text, name in prepared.names.items()}
        return "; ".join(by_name[part.split(" ", 1)[1].split("(", 1)[0]]
                         for part in sql.split("; "))

    def _committed(self) -> None:
        assert self.locked is not None
        self.samples.append(time.perf_counter() - self.locked)

    def __call__(self, instance_id: str) -> int:
        self.locked = None
        row = self.next(instance_id)
        return int(row.current_step[1:])

    def close(self) -> None:
        self.wrapper.__exit__(None, None, None)
        self.connection.close()


# -- a case ------------------------------------------------------------------------------


@dataclass
class Result:
    transitions: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    busy: int = 0
    lock_hold: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.transitions / self.seconds if self.seconds else 0.0

    def add(self, other: Result, *, parallel: bool) -> None:
        """Add a worker's result (``parallel``: it ran at the same time) or a later round's."""
        self.transitions += other.transitions
        self.seconds = max(self.seconds, other.seconds) if parallel else (
            self.seconds + other.seconds)
        self.cpu += other.cpu
        self.busy += other.busy
        self.lock_hold += other.lock_hold


def worker(kind: str, targets: list[str], hot: bool, seconds: float, warm_up: str, seed: int,
           barrier: Any, results: Any, padding: float = 0.0) -> None:
    """Move instances for ``seconds``: random ones, or the hot one (the first fresh one)."""
    from django_workflows.exceptions import Busy

    result = Result()
    if kind in OBSERVED:
        observe(kind)
    run = (Raw(result.lock_hold) if kind == "raw" else Padded(result.lock_hold, padding)
           if kind == PADDED else Service(result.lock_hold))
    rnd = random.Random(seed)
    hot_index = fresh(kind, targets) if hot else 0
    try:
        run(warm_up)  # on an instance of its own
        result.lock_hold.clear()
        barrier.wait()
        cpu, began = time.process_time(), time.perf_counter()
        deadline = began + seconds
        while time.perf_counter() < deadline:
            target = targets[hot_index % len(targets)] if hot else rnd.choice(targets)
            try:
                step = run(target)
            except Busy:
                result.busy += 1
                continue
            result.transitions += 1
            if hot and step >= HOT_ROTATE:
                hot_index += 1
        result.seconds = time.perf_counter() - began
        result.cpu = time.process_time() - cpu
    finally:
        run.close()
    results.put(result)


# --observed: the service with metrics and traces on (docs/observability.md), without an
# exporter, and with the OpenTelemetry SDK's in-memory one.
OBSERVED = ("observed", "observed-memory")


def observe(kind: str) -> None:
    """Metrics and traces on in this (forked) client process."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from django_workflows.observability.metrics import MetricsObserver
    from django_workflows.observability.tracing import TracingObserver
    from django_workflows.services import reports

    provider = TracerProvider()
    if kind == "observed-memory":
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)
    reports.use([MetricsObserver(), TracingObserver()])


def run_case(kind: str, clients: int, targets: list[str], hot: bool, seconds: float,
             warm_ups: list[str], padding: float = 0.0) -> Result:
    from django.db import connections

    connections.close_all()  # no connection crosses a fork
    context = mp.get_context("fork")
    barrier = context.Barrier(clients)
    results = context.Queue()
    processes = [context.Process(target=worker, args=(kind, targets, hot, seconds, warm_ups[n],
                                                      n, barrier, results, padding))
                 for n in range(clients)]
    before = moved(kind)
    for process in processes:
        process.start()
    total = Result()
    for _ in processes:
        total.add(results.get(timeout=seconds + 120), parallel=True)
    for process in processes:
        process.join(30)
        if process.exitcode != 0:
            raise SystemExit(f"a {kind} worker failed (exit code {process.exitcode})")
    written = moved(kind) - before
    warm_ups = clients
    if written != total.transitions + warm_ups:
        raise SystemExit(f"{kind}: counted {total.transitions} transitions (+{warm_ups} "
                         f"warm-up) but the rows moved {written} revisions")
    return total


def fresh(kind: str, targets: list[str]) -> int:
    """The index of the first of ``targets`` that has not yet gone HOT_ROTATE steps."""
    steps = server().steps(table_of(kind), targets)
    for index, target in enumerate(targets):
        if int(steps[target][1:]) < HOT_ROTATE:
            return index
    return len(targets)  # all used: the instances wrap round (a little further each time)


def measure(clients: int, targets: list[str], hot: bool, seconds: float, rounds: int,
            warm_ups: list[str], kinds: tuple[str, ...] = ("raw", "service"),
            padding: float = 0.0) -> dict[str, Result]:
    """Each kind in alternating rounds, so that all see the same load on the machine."""
    results = {kind: Result() for kind in kinds}
    for _ in range(rounds):
        for kind in kinds:
            results[kind].add(run_case(kind, clients, targets, hot, seconds / rounds,
                                       warm_ups, padding), parallel=False)
    return results


def percentile(samples: list[float], fraction: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


def lock_ms(result: Result) -> str:
    return (f"{percentile(result.lock_hold, 0.5) * 1000:.2f} / "
            f"{percentile(result.lock_hold, 0.99) * 1000:.2f}")


def cpu_ms(result: Result) -> str:
    return f"{result.cpu / result.transitions * 1000:.2f}"


def profile(targets: list[str], seconds: float) -> None:
    """The service's ``next`` at one client, in this process, under cProfile."""
    from django_workflows import services

    rnd = random.Random(0)
    services.next(targets[-1])  # warm up
    profiler = cProfile.Profile(time.process_time)  # CPU time: where Python spends it
    deadline = time.perf_counter() + seconds
    count = 0
    profiler.enable()
    while time.perf_counter() < deadline:
        services.next(rnd.choice(targets))
        count += 1
    profiler.disable()
    print(f"\ncProfile of services.next, {count} transitions at one client:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


FEW_FINISHED = 10_000


def fill_finished(total: int) -> float:
    """Cancelled copies of one instance, with its events, until ``total`` are in the tables
    (bench/filler.py); the seconds it took."""
    from bench.filler import fill
    from django_workflows import services
    from django_workflows.models import WorkflowInstance

    template = WorkflowInstance.objects.filter(workflow=WORKFLOW, status="cancelled").first()
    if template is None:
        template = services.cancel(services.create(WORKFLOW, start=True))
    started = time.perf_counter()
    fill(template.pk, total)
    return time.perf_counter() - started


def flat(options: argparse.Namespace, spread: list[str], warm_ups: list[str]) -> None:
    """The 4-process case with few and with ``--finished`` finished instances in the tables."""
    rows = []
    for total in (FEW_FINISHED, options.finished):
        took = fill_finished(total)
        print(f"{total:,} finished instances in the tables ({took:.0f} s to add them)")
        rows.append((total, *measure(options.processes, spread, False, options.seconds,
                                     options.rounds, warm_ups).values()))
    print("\n| finished instances | raw tx/s | service tx/s |\n|---:|---:|---:|")
    for total, raw, service in rows:
        print(f"| {total:,} | {raw.rate:,.0f} | {service.rate:,.0f} |")
    (_, raw_few, few), (_, raw_many, many) = rows
    print(f"\nservice at {options.finished:,} / at {FEW_FINISHED:,}: "
          f"{many.rate / few.rate:.2f} (raw, same tables both times: "
          f"{raw_many.rate / raw_few.rate:.2f}); service/raw at {options.finished:,} over "
          f"service/raw at {FEW_FINISHED:,}: "
          f"{(many.rate / raw_many.rate) / (few.rate / raw_few.rate):.2f}; "
          f"{calibration_line()}")


def along(options: argparse.Namespace, spread: list[str], warm_ups: list[str]) -> None:
    """The 1-client case over fresh instances, then over the same instances moved
    ``--history`` steps along: an instance's snapshot, rewritten by every command, grows
    with its history (the raw loop's rows do not: it is the measure of the machine)."""
    from django_workflows import services

    rows = []
    for steps in (0, options.history):
        reached = {target: int(step[1:])
                   for target, step in server().steps(INSTANCES, spread).items()}
        # The fresh run moved them this far; the run along moves them about as far again,
        # and an instance at the last step would complete.
        if steps and steps + max(reached.values()) >= STEPS - 1:
            raise SystemExit(f"--history {steps}: a run moves these instances up to "
                             f"{max(reached.values())} steps, past the workflow's {STEPS}; "
                             "give fewer steps or more --instances")
        for target, step_number in reached.items():
            for _ in range(steps - step_number):
                services.next(target)
        rows.append((steps, *measure(1, spread, False, options.seconds, options.rounds,
                                     warm_ups).values()))
    print("\n| steps along | raw tx/s | service tx/s | service/raw | CPU ms per tx raw / "
          "service |\n|---:|---:|---:|---:|---:|")
    for steps, raw, service in rows:
        print(f"| {steps:,} | {raw.rate:,.0f} | {service.rate:,.0f} | "
              f"{service.rate / raw.rate:.2f} | {cpu_ms(raw)} / {cpu_ms(service)} |")
    (_, raw_fresh, fresh_), (_, raw_along, along_) = rows
    print(f"\nservice/raw {options.history:,} steps along over service/raw fresh: "
          f"{(along_.rate / raw_along.rate) / (fresh_.rate / raw_fresh.rate):.2f}; "
          f"{calibration_line()}")


def padded(options: argparse.Namespace, spread: list[str], warm_ups: list[str]) -> None:
    """The 1-client case, then the raw loop padded with the service's extra client CPU per
    transaction: how near raw the service could come with raw's database work at its own
    CPU. Where a database's wait grows with the time between commits (a virtual disk's
    flush, a core gone idle), the padded loop falls further behind raw than the padding."""
    first = measure(1, spread, False, options.seconds, options.rounds, warm_ups)
    raw, service = first["raw"], first["service"]
    padding = (options.padding / 1000 if options.padding is not None else
               max(0.0, service.cpu / service.transitions - raw.cpu / raw.transitions))
    second = measure(1, spread, False, options.seconds, options.rounds, warm_ups,
                     ("raw", PADDED), padding)
    again, padded_ = second["raw"], second[PADDED]
    print("| kind | tx/s | over raw in its rounds | CPU ms per tx |\n|---|---:|---:|---:|")
    for name, result, base in (("raw", raw, raw), ("service", service, raw),
                               ("raw", again, again),
                               (f"raw padded by {padding * 1000:.2f} ms", padded_, again)):
        print(f"| {name} | {result.rate:,.0f} | {result.rate / base.rate:.2f} | "
              f"{cpu_ms(result)} |")
    print(f"\nservice/raw {service.rate / raw.rate:.2f}; raw padded by "
          f"{padding * 1000:.2f} ms/raw {padded_.rate / again.rate:.2f}; {calibration_line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per case and kind")
    parser.add_argument("--rounds", type=int, default=3,
                        help="raw and service alternate this many times in each case")
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--observed", action="store_true",
                        help="also the service with metrics and traces on (the metrics and "
                             "otel extras), against it off in the same rounds")
    parser.add_argument("--profile", action="store_true",
                        help="profile the service at one client and stop")
    parser.add_argument("--finished", type=int, metavar="N",
                        help="only the 4-process case, with 10,000 and then N finished "
                             "instances in the tables (PostgreSQL)")
    parser.add_argument("--history", type=int, metavar="N",
                        help="only the 1-client case over --instances instances, fresh and "
                             "then N steps along")
    parser.add_argument("--padded", action="store_true",
                        help="only the 1-client case, then the raw loop padded with the "
                             "service's extra client CPU per transaction")
    parser.add_argument("--padding", type=float, metavar="MS",
                        help="with --padded: pad raw's loop by MS milliseconds instead")
    parser.add_argument("--database", metavar="URL",
                        help="the server, as a DATABASE_URL: postgres:// or mysql://; its "
                             "database name is not used (default: PostgreSQL at 127.0.0.1, "
                             "user postgres, or DWF_BENCH_HOST, _PORT, _USER, _PASSWORD)")
    options = parser.parse_args()
    if options.history is not None and not 0 < options.history < STEPS - 1:
        parser.error(f"--history: 1 to {STEPS - 2}")
    if options.padding is not None and not options.padded:
        parser.error("--padding goes with --padded")
    if options.database:
        os.environ["DWF_BENCH_URL"] = options.database  # read by bench/settings.py
    started = time.perf_counter()
    setup_database()
    try:
        spread = new_instances(options.instances)
        warm_ups = new_instances(options.processes)
        if options.profile:
            profile(spread, options.seconds)
            return
        if options.finished:
            flat(options, spread, warm_ups)
            return
        if options.history:
            along(options, spread, warm_ups)
            return
        if options.padded:
            padded(options, spread, warm_ups)
            return
        import django
        from django.conf import settings

        print(f"{server().version()}, Django {django.get_version()}, "
              f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
              f"database {settings.DATABASES['default']['NAME']}; "
              f"{options.seconds:g} s per case and kind in {options.rounds} rounds; "
              f"load average {os.getloadavg()[0]:.1f}; {calibration_line()}\n")
        rows, observed = [], []
        kinds = ("raw", "service", *OBSERVED) if options.observed else ("raw", "service")
        for clients in (1, options.processes):
            for is_hot in (False, True):
                # A hot instance is left after HOT_ROTATE steps: fresh ones for each case.
                targets = new_instances(HOT_CAPACITY) if is_hot else spread
                results = measure(clients, targets, is_hot, options.seconds,
                                  options.rounds, warm_ups, kinds)
                where = "1 hot instance" if is_hot else f"{options.instances} instances"
                who = "1 client" if clients == 1 else f"{clients} processes"
                rows.append((f"{who}, {where}", results["raw"], results["service"]))
                observed.append((f"{who}, {where}", results))
        print("| case | raw tx/s | service tx/s | service/raw | raw lock hold p50 / p99 ms "
              "| service lock hold p50 / p99 ms | CPU ms per tx raw / service |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, raw, service in rows:
            print(f"| {name} | {raw.rate:,.0f} | {service.rate:,.0f} | "
                  f"{service.rate / raw.rate:.2f} | {lock_ms(raw)} | {lock_ms(service)} | "
                  f"{cpu_ms(raw)} / {cpu_ms(service)} |")
        if options.observed:
            print("\n| case | observed / service (no exporter) | with the in-memory exporter "
                  "| CPU ms per tx service / observed / in-memory |\n|---|---:|---:|---:|")
            for name, results in observed:
                service = results["service"]
                cpu = " / ".join(f"{results[k].cpu / results[k].transitions * 1000:.2f}"
                                 for k in ("service", *OBSERVED))
                print(f"| {name} | {results['observed'].rate / service.rate:.2f} | "
                      f"{results['observed-memory'].rate / service.rate:.2f} | {cpu} |")
        busy = sum(r.busy for _, *results in rows for r in results)
        if busy:
            print(f"\n{busy} commands answered Busy and were retried")
    finally:
        teardown_database()
    print(f"\n({time.perf_counter() - started:.0f} s in all; load average now "
          f"{os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
