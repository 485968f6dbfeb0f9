"""Limits per key under real workers: ``bench/operations.py --limits``.

    .venv/bin/python bench/operations.py --limits --tasks 600      # ORM broker; ~2.5 minutes
    .venv/bin/python bench/operations.py --limits --brokers orm,redis --repeat 3

Imported by bench/operations.py after ``django.setup()``; ``run`` gets that module (its
database, clusters and counting). For each broker (django-q2's: ``orm``, ``orm-listen``,
``redis``):

(a) fairness. A ``qcluster`` with ``--limit-workers`` workers runs ``bench-limited``: an
    operation that sleeps 20 ms, held to ``Limit(max=2)`` per ``state["key"]``. With the
    cluster idle, a burst on the hot key (90 % of ``--limit-attempts``) is committed at once
    (one transaction: its first 2 go to the broker, the others wait in our tables); then
    the cold work (the other 10 %, over 19 keys) is created one instance at a time. Its
    time is from the first cold create to the last cold attempt's ``finished_at``; against
    the same cold work with no hot key, in the same run, in turns (each goes first in one
    turn; the cluster is warmed up before). As a check that the measure can see a hot key:
    the same with ``bench-unlimited`` (no limit), whose burst goes to the broker whole, so
    that the cold work waits behind what the workers have not taken yet.
(b) from the attempt rows of the limited runs, after each: the most attempts of one
    ``limit_key`` whose ``claimed_at``-``finished_at`` intervals overlap (an interval ends
    before one that starts at the same instant). ``finished_at`` is taken before the
    finish commits and the slot is given on after it, so an overlap here is a real one.
(c) cost, with ``--workers`` workers and ``--tasks`` operations, counted as
    bench/operations.py counts them, in turns, best of ``--repeat``: raw no-op django-q2
    tasks; ``bench-noop`` (no limit: what bench/operations.py measures without
    ``--limits``); ``bench-noop-limited`` (a ``Limit`` of 1,000,000 that never binds) with
    a key of its own for each instance and with one key for all; and raw and ``bench-noop``
    again on the code before limits (``--before``, default ``68d8982^``: its tree from
    ``git archive``, its own bench/operations.py in a subprocess, its own database). The
    machinery cannot be taken out of this tree, so the aim (unlimited operations lose at
    most 10 %) compares ``bench-noop``/raw here with ``bench-noop``/raw there.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from django.db import connection, transaction

from bench import invariants
from bench.calibration import calibration_line
from django_workflows import services
from django_workflows.models import Attempt, AttemptStatus, LimitedKey, WorkflowInstance

ROOT = Path(__file__).resolve().parent.parent
LIMITED, UNLIMITED, NOOP_LIMITED = "bench-limited", "bench-unlimited", "bench-noop-limited"
HOT = "hot"
COLD_KEYS = [f"cold-{n:02d}" for n in range(1, 20)]  # with the hot key, 20 keys
MAX = 2  # bench/opsapp/workflows.py: Limit(max=2)
SLEEP = 0.02
BROKERS = ("orm", "orm-listen", "redis")
VARIANTS = ("alone", "limited", "unlimited")  # the cold work with no hot key; with its burst


def create(workflow: str, key: str, sleep: float = SLEEP) -> str:
    return str(services.create(workflow, state={"key": key, "sleep": sleep}, start=True).pk)


def clear(ops: ModuleType, broker: str) -> None:
    ops.clear(broker)
    LimitedKey.objects.all().delete()


# -- (a) and (b): a hot key beside cold ones ---------------------------------------------


@dataclass
class Burst:
    variant: str
    cold_seconds: float  # first cold create to the last cold finish
    cold_p50: float  # a cold instance's create to its attempt's finish
    hot_unstarted: int  # hot attempts not yet claimed when the cold work was done
    done: bool  # every attempt of the run finished within --seconds
    intervals: list[tuple[str, float, float]] = field(default_factory=list)


def finished(ids: list[str]) -> int:
    return Attempt.objects.filter(instance_id__in=ids, status=AttemptStatus.FINISHED).count()


def burst(ops: ModuleType, broker: str, running: Any, variant: str, attempts: int,
          seconds: float) -> Burst:
    clear(ops, broker)
    workflow = UNLIMITED if variant == "unlimited" else LIMITED
    hot: list[str] = []
    if variant != "alone":
        with transaction.atomic():  # the burst arrives at once
            hot = [create(workflow, HOT) for _ in range(attempts * 9 // 10)]
    cold_count = attempts - attempts * 9 // 10
    began = time.time()
    cold = [create(workflow, COLD_KEYS[n % len(COLD_KEYS)]) for n in range(cold_count)]
    deadline = time.monotonic() + seconds
    while finished(cold) < len(cold) and time.monotonic() < deadline:
        running.check()
        time.sleep(0.02)
    while finished(cold + hot) < len(cold + hot) and time.monotonic() < deadline:
        running.check()
        time.sleep(0.05)
    done = finished(cold + hot) == len(cold + hot)
    if not done:  # bounded: what is left is thrown away before the next run
        ops.drop_queued(broker)
    running.settle()
    rows = Attempt.objects.filter(instance_id__in=cold, status=AttemptStatus.FINISHED)
    ends = {str(i): end for i, end in rows.values_list("instance_id", "finished_at")}
    created = dict(WorkflowInstance.objects.filter(pk__in=cold).values_list("pk", "created_at"))
    last = max(ends.values()).timestamp() if ends else float("nan")
    latencies = [(end - created[i]).total_seconds() for i, end in
                 ((i, ends[str(i)]) for i in created if str(i) in ends)]
    unstarted = sum(1 for at in Attempt.objects.filter(instance_id__in=hot)
                    .values_list("claimed_at", flat=True)
                    if at is None or at.timestamp() > last)
    now = time.time()
    intervals = [(key, start.timestamp(), end.timestamp() if end else now) for key, start, end
                 in Attempt.objects.exclude(limit_key="").filter(claimed_at__isnull=False)
                 .values_list("limit_key", "claimed_at", "finished_at")]
    return Burst(variant, last - began if len(ends) == len(cold) else float("nan"),
                 ops.percentile(latencies, 0.5), unstarted, done, intervals)


def most_at_once(intervals: list[tuple[str, float, float]]) -> dict[str, int]:
    """The most intervals of each key that overlap (``invariants.most_at_once``, whose
    check of the reliability load counts the same way)."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key, start, end in intervals:
        spans[key].append((start, end))
    return {key: invariants.most_at_once(pairs) for key, pairs in spans.items()}


def mean_at_once(intervals: list[tuple[str, float, float]], key: str) -> float:
    """How many of ``key``'s attempts ran on average from its first claim to its last
    finish: how well its slots were used."""
    spans = [(start, end) for k, start, end in intervals if k == key]
    if not spans:
        return float("nan")
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    return sum(end - start for start, end in spans) / wall if wall > 0 else float("nan")


def fairness(ops: ModuleType, broker: str, options: Any) -> list[Burst]:
    results = []
    with ops.cluster(broker, options.limit_workers) as running:
        warm = [create(UNLIMITED, "warm-up", 0) for _ in range(options.limit_workers * 2)]
        deadline = time.monotonic() + options.seconds
        while finished(warm) < len(warm) and time.monotonic() < deadline:
            running.check()
            time.sleep(0.05)
        running.settle()
        for run in range(options.repeat):
            for variant in VARIANTS[run % 3:] + VARIANTS[:run % 3]:  # each first in turn
                result = burst(ops, broker, running, variant, options.limit_attempts,
                               options.seconds)
                results.append(result)
                at_once = most_at_once(result.intervals)
                print(f"{broker} run {run + 1}, cold work {variant_name(variant)}: "
                      f"{result.cold_seconds * 1000:.0f} ms (each: p50 "
                      f"{result.cold_p50 * 1000:.0f} ms)"
                      + (f"; hot attempts not yet started then: {result.hot_unstarted}"
                         if variant != "alone" else "")
                      + (f"; at once, most: hot {at_once.get(HOT, 0)}, cold "
                         f"{max((n for k, n in at_once.items() if k != HOT), default=0)}"
                         if variant == "limited" else "")
                      + ("" if result.done else f" (bounded: not all done in "
                                                f"{options.seconds:g} s)"), flush=True)
    return results


def variant_name(variant: str) -> str:
    return {"alone": "alone", "limited": "with the hot burst (Limit)",
            "unlimited": "with the hot burst, no limit"}[variant]


# -- (c): what the machinery costs -------------------------------------------------------


def limited_noops(ops: ModuleType, broker: str, tasks: int, workers: int, seconds: float,
                  shared: bool) -> Any:
    """``bench-noop-limited``: a key for each instance, or one for all (``shared``)."""
    clear(ops, broker)
    for n in range(tasks):
        create(NOOP_LIMITED, "all" if shared else f"key-{n}", 0)
    done = WorkflowInstance.objects.filter(workflow=NOOP_LIMITED, current_step="done").count
    with ops.cluster(broker, workers) as running:
        rate = ops.watch(done, tasks, seconds, running)
    waiting = Attempt.objects.filter(status=AttemptStatus.WAITING).count()
    if waiting:
        raise SystemExit(f"a limit that never binds held {waiting} attempts waiting")
    return rate


@contextmanager
def before_tree(commit: str) -> Iterator[Path | None]:
    """The tree of ``commit`` in a temporary directory (None: git could not give it)."""
    with tempfile.TemporaryDirectory(prefix="dwf-before-") as directory:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit],
                                 capture_output=True, check=False)
        if archive.returncode:
            print(f"(no run on {commit}: {archive.stderr.decode().strip()})")
            yield None
            return
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(directory, filter="data")
        yield Path(directory)


RUN_LINE = re.compile(r"run 1: raw ([\d.]+) tasks/s .*ours ([\d.]+) operations/s")
OWN_ENV = ("DJANGO_SETTINGS_MODULE", "DWF_BENCH_DB", "DWF_BENCH_QUEUE", "DWF_BENCH_BROKER",
           "DWF_BENCH_WORKERS", "DWF_BENCH_OBSERVE")


def before_run(tree: Path, broker: str, options: Any) -> tuple[float, float]:
    """Raw and ``bench-noop`` on the tree before limits: its own benchmark, one run each,
    with a database and a queue of its own; (raw tasks/s, operations/s)."""
    env = {k: v for k, v in os.environ.items() if k not in OWN_ENV}
    script = tree / "bench" / "operations.py"
    done = subprocess.run(
        [sys.executable, str(script), "--brokers", broker, "--tasks", str(options.tasks),
         "--workers", str(options.workers), "--seconds", str(options.seconds),
         "--repeat", "1", "--latency-samples", "0"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=4 * options.seconds + 300,
        check=False)
    found = RUN_LINE.search(done.stdout)
    if not found:
        raise SystemExit(f"the run on the tree before limits failed:\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-3000:]}")
    return float(found[1]), float(found[2])


@dataclass
class Cost:
    raw: list[Any] = field(default_factory=list)
    ours: list[Any] = field(default_factory=list)
    own_key: list[Any] = field(default_factory=list)
    one_key: list[Any] = field(default_factory=list)
    before: list[tuple[float, float]] = field(default_factory=list)


def cost(ops: ModuleType, broker: str, options: Any, tree: Path | None) -> Cost:
    found = Cost()
    args = (broker, options.tasks, options.workers, options.seconds)
    for run in range(options.repeat):
        found.raw.append(ops.raw_tasks(*args))
        found.ours.append(ops.operations(*args)[0])
        found.own_key.append(limited_noops(ops, *args, shared=False))
        found.one_key.append(limited_noops(ops, *args, shared=True))
        line = (f"{broker} run {run + 1}: raw {found.raw[-1].per_second:.0f} tasks/s, "
                f"unlimited {found.ours[-1].per_second:.0f} operations/s, limited (never "
                f"binding) {found.own_key[-1].per_second:.0f} with a key each and "
                f"{found.one_key[-1].per_second:.0f} with one key")
        if tree is not None:
            found.before.append(before_run(tree, broker, options))
            raw_before, ours_before = found.before[-1]
            line += (f"; before limits: raw {raw_before:.0f}, unlimited {ours_before:.0f}; "
                     f"unlimited/raw now {found.ours[-1].per_second / found.raw[-1].per_second:.2f}"
                     f", before {ours_before / raw_before:.2f}")
        print(line, flush=True)
    return found


# -- the report --------------------------------------------------------------------------


def holds(ok: bool) -> str:
    return "holds" if ok else "DOES NOT HOLD"


def run(ops: ModuleType, options: Any) -> None:
    brokers = [broker for broker in options.brokers.split(",") if broker]
    if unknown := [b for b in brokers if b not in BROKERS]:
        raise SystemExit(f"--limits measures django-q2's brokers ({', '.join(BROKERS)}), "
                         f"not {', '.join(unknown)}")
    load = os.getloadavg()[0]
    fair: dict[str, list[Burst]] = {}
    costs: dict[str, Cost] = {}
    with before_tree(options.before) if options.before else _none() as tree:
        for broker in brokers:
            ops.use_broker(broker)
            fair[broker] = fairness(ops, broker, options)
            costs[broker] = cost(ops, broker, options, tree)
    hot = options.limit_attempts * 9 // 10
    print(f"\nLimits per key: {options.limit_workers} workers for (a) and (b), "
          f"{options.workers} for (c); best of {options.repeat} runs each; PostgreSQL "
          f"{connection.pg_version // 10000}, persistent connections, load average {load:.1f} "
          f"before and {os.getloadavg()[0]:.1f} after; {calibration_line()}")
    print(f"\n(a) {options.limit_attempts} attempts of a {SLEEP * 1000:.0f} ms operation over "
          f"{len(COLD_KEYS) + 1} keys, Limit(max={MAX}) per key: a burst of {hot} on the hot "
          f"key committed at once, then {options.limit_attempts - hot} cold attempts over "
          f"{len(COLD_KEYS)} keys created one at a time. The cold work's time, from its "
          "first create to its last finish:\n")
    print("| broker | cold work alone | with the hot burst (Limit) | ratio | with the burst, "
          "no limit | ratio |\n| --- | ---: | ---: | ---: | ---: | ---: |")
    verdicts = []
    for broker, results in fair.items():
        best = {v: min((r.cold_seconds for r in results if r.variant == v),
                       default=float("nan")) for v in VARIANTS}
        ratio = best["limited"] / best["alone"]
        print(f"| {broker} | {best['alone'] * 1000:.0f} ms | {best['limited'] * 1000:.0f} ms "
              f"| {ratio:.2f} | {best['unlimited'] * 1000:.0f} ms | "
              f"{best['unlimited'] / best['alone']:.2f} |")
        verdicts.append(f"(a) {broker}: cold work with the hot key's burst / alone = "
                        f"{ratio:.2f} (aim < 1.2: {holds(ratio < 1.2)})")
    for broker, results in fair.items():
        intervals = [i for r in results if r.variant == "limited" for i in r.intervals]
        at_once = most_at_once(intervals)
        top = max(at_once.values(), default=0)
        cold = max((n for k, n in at_once.items() if k != HOT), default=0)
        verdicts.append(
            f"(b) {broker}: most attempts of one key running at once, from "
            f"{len(intervals)} claimed-finished intervals over {len(at_once)} keys: "
            f"{top} (hot {at_once.get(HOT, 0)}, cold {cold}; aim <= {MAX}: "
            f"{holds(0 < top <= MAX)}); the hot key ran "
            f"{mean_at_once(intervals, HOT):.2f} of its {MAX} on average, first claim to "
            "last finish")
    for broker, found in costs.items():
        raw, ours = (max(r.per_second for r in rates) for rates in (found.raw, found.ours))
        own, one = (max(r.per_second for r in rates) for rates in (found.own_key, found.one_key))
        cpu = " / ".join(f"{min(r.cpu_ms for r in rates):.1f}" for rates in (
            found.raw, found.ours, found.own_key, found.one_key))
        line = (f"(c) {broker}, {options.tasks} no-op operations, {options.workers} workers: "
                f"raw {raw:.0f} tasks/s, unlimited {ours:.0f} operations/s, so unlimited/raw "
                f"= {ours / raw:.2f} (the figure bench/operations.py gives without --limits)")
        if found.before:
            raw_before = max(r for r, _ in found.before)
            ours_before = max(o for _, o in found.before)
            change = (ours / raw) / (ours_before / raw_before)
            line += (f"; on the code before limits ({options.before}) in the same run: raw "
                     f"{raw_before:.0f}, unlimited {ours_before:.0f}, unlimited/raw "
                     f"{ours_before / raw_before:.2f}; unlimited operations now against "
                     f"before, each over its raw: {change:.2f} (aim >= 0.9, at most 10 % "
                     f"lost: {holds(change >= 0.9)})")
        else:
            line += " (no run before limits: --before \"\"; no verdict)"
        line += (f". Using a Limit that never binds: {own:.0f} operations/s with a key each, "
                 f"{one:.0f} with one key for all, {own / ours:.2f} and {one / ours:.2f} of "
                 f"unlimited (no aim). Cluster CPU per task, raw / unlimited / a key each / "
                 f"one key: {cpu} ms")
        verdicts.append(line)
    print("\n" + "\n".join(verdicts))


@contextmanager
def _none() -> Iterator[None]:
    yield None
