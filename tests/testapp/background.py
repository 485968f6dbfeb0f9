"""Workflows the real-qcluster tests drive. They talk to tests through rows.

Each operation or branch records what it did as a ``Note``; tests poll notes
and instances with deadlines. Behaviour is steered by the instance's state
(for example ``{"fail_times": 2}``), so the worker needs no shared memory.
"""

from __future__ import annotations

import os
import signal
import time

from django_workflows import Branch, Limit, Operation, Step, Transition, Workflow, register

from .models import Note


def note(text: str) -> None:
    Note.objects.create(text=text)


def flaky(ctx):
    note(f"flaky attempt {ctx.attempt}")
    if ctx.attempt <= ctx.state.get("fail_times", 0):
        raise RuntimeError(f"flaky failure {ctx.attempt}")
    return {"attempt": ctx.attempt}


def slow_counter(ctx):
    """Counts to ``steps`` with progress, checking for cancellation every tick."""
    steps = ctx.state.get("steps", 20)
    for index in range(1, steps + 1):
        ctx.check_cancelled()
        ctx.progress(index, steps, f"tick {index}")
        ctx.log(f"tick {index}")
        time.sleep(ctx.state.get("tick", 0.2))
    note("slow counter finished")
    return {"ticks": steps}


def sleeper(ctx):
    """Ignores cancellation: sleeps, then returns (a late result)."""
    time.sleep(ctx.state.get("sleep", 3))
    note("sleeper finished")
    return {"late": True}


def die_once(ctx):
    """Kills its own worker process the first time it runs."""
    if not Note.objects.filter(text="died").exists():
        note("died")
        os.kill(os.getpid(), signal.SIGKILL)
    note("survived")
    return {"survived": True}


def limited_work(ctx):
    """Runs ``sleep`` seconds; with ``die``, kills its own worker the first time it runs."""
    if ctx.state.get("die") and not Note.objects.filter(text="limited died").exists():
        note("limited died")
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(ctx.state.get("sleep", 0.2))
    note(f"limited {ctx.state.get('n', 0)}")
    return {}


def branch(name: str):
    def run(ctx):
        note(f"branch {name}")
        if name in ctx.state.get("failing_branches", []) and not Note.objects.filter(
                text=f"branch {name} fixed").exists():
            raise RuntimeError(f"branch {name} broke")
    return run


def compensation(name: str):
    def run(*args):
        if name == ctx_killer_name and not Note.objects.filter(text="compensation died").exists():
            note("compensation died")
            os.kill(os.getpid(), signal.SIGKILL)
        note(f"compensate {name}")
    return run


ctx_killer_name = "second"

retrying = register(Workflow(
    id="bg-retrying",
    steps=[Step("work", advance="auto",
                operations=[Operation("flaky", run=flaky, retries=3, retry_delay=0.2)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))

progressing = register(Workflow(
    id="bg-progress",
    steps=[Step("work", advance="auto", operations=[Operation("count", run=slow_counter)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))

timing_out = register(Workflow(
    id="bg-timeout",
    steps=[Step("work", advance="auto", timeout=1, operations=[Operation("sleep", run=sleeper)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))

branching = register(Workflow(
    id="bg-branches",
    steps=[Step("fan", advance="auto",
                parallel=[Branch("a", run=branch("a")), Branch("b", run=branch("b")),
                          Branch("c", run=branch("c"))]),
           Step("done")],
    transitions=[Transition("fan", "done")],
))

auto_child = Workflow(
    id="bg-child",
    steps=[Step("child-work", advance="auto",
                operations=[Operation("child-op", run=lambda ctx: note("child op") or {})])],
)

nesting = register(Workflow(
    id="bg-parent",
    steps=[Step("wait-child", advance="auto", nested=auto_child), Step("done")],
    transitions=[Transition("wait-child", "done")],
))

crashing = register(Workflow(
    id="bg-crash",
    steps=[Step("work", advance="auto", operations=[Operation("die", run=die_once)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))

compensating = register(Workflow(
    id="bg-rollback",
    steps=[
        Step("one", advance="auto", compensate=compensation("step one"),
             operations=[Operation("first", run=lambda ctx: {"n": 1},
                                   rollback=compensation("first")),
                         Operation("second", run=lambda ctx: {"n": 2},
                                   rollback=compensation("second"))]),
        Step("two", advance="auto", compensate=compensation("step two"),
             parallel=[Branch("x", run=lambda ctx: None, compensate=compensation("x")),
                       Branch("y", run=lambda ctx: None, compensate=compensation("y"))]),
        Step("end"),
    ],
    transitions=[Transition("one", "two"), Transition("two", "end")],
))

interruptible = register(Workflow(
    id="bg-interruptible",
    steps=[Step("work", advance="auto",
                operations=[Operation("prepare", run=lambda ctx: note("prepared") or {"ok": 1}),
                            Operation("count", run=slow_counter)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))

# An operation with a timeout of its own (the Tasks runner's tests: the attempt is told to stop).
op_timing_out = register(Workflow(
    id="bg-op-timeout",
    steps=[Step("work", advance="auto",
                operations=[Operation("count", run=slow_counter, timeout=1)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))

# At most ``max`` of an operation per tenant run at once, however many workers are free.
limited = register(Workflow(
    id="bg-limited",
    steps=[Step("work", advance="auto", operations=[Operation(
        "call", run=limited_work,
        concurrency=Limit(key=lambda ctx: f"tenant-{ctx.state['tenant']}", max=1))]),
           Step("done")],
    transitions=[Transition("work", "done")],
))


def where(ctx):
    """Notes the process and the database session it ran in."""
    note(f"attempt {process_and_session()}")
    return {}


def process_and_session() -> str:
    """``pid=<this process> db=<the database's id of this connection>`` (none on SQLite)."""
    from django.db import connection

    query = {"postgresql": "SELECT pg_backend_pid()", "mysql": "SELECT CONNECTION_ID()"}
    session = "none"
    if connection.vendor in query:
        with connection.cursor() as cursor:
            cursor.execute(query[connection.vendor])
            session = str(cursor.fetchone()[0])
    return f"pid={os.getpid()} db={session}"


# Where a worker runs an operation (tests/background/test_tasks_runner.py).
whereabouts = register(Workflow(
    id="bg-where",
    steps=[Step("work", advance="auto", operations=[Operation("where", run=where)]),
           Step("done")],
    transitions=[Transition("work", "done")],
))
