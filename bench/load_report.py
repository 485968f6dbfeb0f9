"""The load harness's report: the tables it prints and its verdict (``bench/load.py``)."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

# A record in the web log: the example's format (bench/settings_load.py), "2026-12-05
# 19:07:54,720 ...", or gunicorn's own, "[2026-12-05 19:07:54 +0000] [pid] [ERROR] ...".
RECORD = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} |\[\d{4}-\d\d-\d\d )")


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def server_error_traces(web_log: str, limit: int = 3, lines: int = 30) -> list[str]:
    """The web server's own account of its 500s: each ``django.request`` error record
    that is not a 503, with the end of its traceback (what the load's verdict then names)."""
    records: list[list[str]] = []
    for line in web_log.splitlines():
        if RECORD.match(line):
            records.append([line])
        elif records:
            records[-1].append(line)
    failures = [r for r in records if (" django.request ERROR " in r[0]
                                       and "Service Unavailable" not in r[0])
                or " [ERROR] " in r[0] or " [CRITICAL] " in r[0]]
    return ["\n".join([r[0], *r[1:][-lines:]]) for r in failures[:limit]]


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
        for sample in http["first_server_errors"]:
            print(f"server error: {json.dumps(sample)}")
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
    for run in report["runs"]:  # last, where a test's message (the output's tail) shows them
        for trace in run["http"]["server_error_traces"]:
            print(f"\n{run['broker']}: the web server's log of a server error:\n{trace}")
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
