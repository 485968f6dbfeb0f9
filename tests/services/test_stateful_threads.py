"""The rules of the stateful test (``tests/stateful_world.py``), run at once by real threads
on PostgreSQL for a while, each with its own connection: commands, signals, workers that
run, die or report late, and sweeps meet on the same rows and keys. As they go, no key
runs more attempts than its limit and no sender is let through; once they stop (a deadlock
fails the join, never hangs it) and a quiet sweep ran, every check holds.

    DWF_STATEFUL_SECONDS=600 DWF_STATEFUL_SEED=7 DATABASE_URL=postgres://... \\
        .venv/bin/python -m pytest -p no:cacheprovider tests/services/test_stateful_threads.py

(``DWF_STATEFUL_THREADS``: how many, 4 by default; the seed is printed.)
"""

from __future__ import annotations

import os
import random
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from django_workflows.models import Attempt, AttemptStatus, WorkflowInstance
from tests import stateful_checks as checks
from tests.stateful_world import (
    COMMANDS,
    DOOMED,
    FIRST,
    FLOW,
    INPUTS,
    KEYS,
    MESSAGE_IDS,
    PAYLOADS,
    PEOPLE,
    REFERENCES,
    SECONDS,
    SETTINGS,
    SIGNALLED,
    STEPS,
    HandedOut,
    World,
    make_people,
)

SECONDS_TO_RUN = float(os.environ.get("DWF_STATEFUL_SECONDS", "60"))
THREADS = int(os.environ.get("DWF_STATEFUL_THREADS", "4"))
SEED = int(os.environ.get("DWF_STATEFUL_SEED", str(random.SystemRandom().randrange(10**9))))
JOIN_SLACK = 60.0  # seconds a thread may take past the end before it counts as stuck

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True),
              pytest.mark.slow, pytest.mark.timeout(SECONDS_TO_RUN + 3 * JOIN_SLACK + 120)]

# The checks that hold at any moment, read while the threads run (a sender's check needs
# the revision at which a state update locked an instance, known once it returned).
AS_THEY_GO = ("limits",)


def a_rule(world: World, rng: random.Random) -> Callable[[], None]:
    """One of the machine's rules with its arguments drawn, weighted as people act: mostly
    moving instances on, sending signals and giving commands."""
    instances = world.instance_ids()
    tokens = list(dict.fromkeys(HandedOut.tokens))[-20:]
    # Mostly the newest few, so threads meet on the same rows.
    some = rng.choice(instances[-6:] if rng.random() < 0.8 else instances) \
        if instances else None

    def create() -> None:
        world.create(rng.choice((FLOW, FLOW, FIRST)), key=rng.choice(KEYS),
                     locked=rng.random() < 0.3, reference=rng.choice((None, *REFERENCES)),
                     start=rng.random() < 0.8, by=rng.choice(("owner", "code")))

    def signal() -> None:
        address = rng.choice(("instance", "reference", "correlation"))
        to: dict[str, Any] = {"correlation": rng.choice(KEYS)}
        workflow = rng.choice(SIGNALLED)
        if address == "instance" and some is not None:
            to, workflow = {"instance": some}, world.instances[some]
        elif address == "reference":
            to = {"reference": rng.choice(REFERENCES)}
        world.signal(workflow, by=rng.choice((*PEOPLE, "bot", "code")),
                     payload=rng.choice((*PAYLOADS, {"v": 1})),
                     message_id=rng.choice(MESSAGE_IDS), **to)

    rules: list[tuple[float, Callable[[], None]]] = [
        (2 if len(instances) < 30 else 0.5, create), (3, signal)]
    if some is not None:
        rules += [
            (4, lambda: world.move_on(some, rng.choice(MESSAGE_IDS))),
            (3, lambda: world.command(some, rng.choice((*COMMANDS, "next")),
                                      by=rng.choice(("owner", "operator", "code", "stranger",
                                                     "bot")),
                                      step=rng.choice(STEPS), input=rng.choice(INPUTS))),
            (1, lambda: world.hold_row(some, rng.choice((0.1, 0.3)))),
            (1, lambda: world.update_state(some, key=rng.choice(KEYS),
                                           locked=rng.random() < 0.3,
                                           by=rng.choice(("owner", "operator")))),
        ]
    if tokens:
        token = rng.choice(tokens)
        rules += [(2, lambda: world.run_worker(token, outcome=rng.choice(("ok", "ok", "fail")),
                                               seconds=rng.choice((0, 0, 0.05)))),
                  (0.5, lambda: world.worker_dies(token))]
    stalled_tokens = world.stalled_tokens()
    if stalled_tokens:
        stalled = rng.choice(stalled_tokens)
        rules.append((0.5, lambda: world.stalled_worker_reports(stalled,
                                                                ok=rng.random() < 0.7)))
    rules += [(1, lambda: world.sweep(rng.choice(SECONDS))),
              (0.2, world.retry_set_aside)]
    if not world.deploys:
        rules.append((0.1, lambda: world.create(DOOMED)))
        rules.append((0.05, world.remove_doomed))
    weights, actions = zip(*rules, strict=True)
    return rng.choices(actions, weights=weights)[0]


def test_the_rules_at_once_in_threads_keep_every_invariant(capsys: Any) -> None:
    with capsys.disabled():
        print(f"\nstateful threads: seed {SEED}, {THREADS} threads, {SECONDS_TO_RUN:g} s")
    # Locks given up on soon: a busy row's paths (a signal kept, a result kept) are taken too.
    world = World(make_people(), strict=False, settings={**SETTINGS, "LOCK_TIMEOUT": 0.05})
    with world.opened():
        for _ in range(2):
            world.create(DOOMED)
        stop = time.monotonic() + SECONDS_TO_RUN
        failures: list[str] = []
        done: Counter[int] = Counter()  # rules each thread gave

        def act(number: int) -> None:
            rng = random.Random(f"{SEED}:{number}")
            try:
                while time.monotonic() < stop and not failures:
                    a_rule(world, rng)()
                    done[number] += 1
            except BaseException:
                failures.append(f"thread {number}: {traceback.format_exc()}")
            finally:
                connection.close()

        threads = [threading.Thread(target=act, args=(n,), daemon=True)
                   for n in range(THREADS)]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads) and time.monotonic() < stop + JOIN_SLACK:
            seen = checks.broken(world, AS_THEY_GO)
            assert not seen, f"as the threads ran (seed {SEED}): {seen}"
            time.sleep(0.2)
        for thread in threads:
            thread.join(JOIN_SLACK)
        stuck = [t.name for t in threads if t.is_alive()]
        assert not stuck, f"threads {stuck} never finished (a deadlock?); seed {SEED}"
        assert not failures, f"seed {SEED}:\n" + "\n".join(failures)

        # Quiet: what was left over is handed over (kept signals, slots) by a sweep.
        world.strict = True
        world.sweep(1)
        found = checks.broken(world)
        assert not found, f"seed {SEED}: {found}"
        with capsys.disabled():
            print(f"stateful threads: {sum(done.values())} rules, "
                  f"{WorkflowInstance.objects.count()} instances, "
                  f"{Attempt.objects.filter(status=AttemptStatus.FINISHED).count()} attempts "
                  f"finished; refusals {dict(world.refused.most_common())}")
        assert WorkflowInstance.objects.count() > THREADS  # they did act
        assert Attempt.objects.filter(status=AttemptStatus.FINISHED).exists()
