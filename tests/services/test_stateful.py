"""The service layer, driven by a stateful randomized test (issue 36): Hypothesis draws
sequences of every command, signals by instance, reference and correlation (early,
repeated, refused), workers that run, die or report late, time passing with a sweep,
limits, and a workflow a deploy removes, and after every step checks that

- nothing is delivered that its sender may not send;
- every due deadline fired within one sweep, or is recorded with its error;
- no key runs more attempts than its limit;
- a message id takes effect at most once;
- ``completed_steps`` agrees with the history;
- every accepted signal ends taken, kept, held or refused (or expired) in its record;
- every change of state has its event;
- nothing is in flight without an attempt that can finish it.

The world, its rules and its checks: ``tests/stateful_world.py`` and
``tests/stateful_checks.py``. A short run is part of the suite; a long one::

    DWF_STATEFUL_EXAMPLES=10000 .venv/bin/python -m pytest -p no:cacheprovider \\
        tests/services/test_stateful.py

(``DWF_STATEFUL_STEPS``: the most steps of one example, 40 by default.)
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from django_workflows.models import Attempt, AttemptStatus, SweepFailure
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
    SIGNALLED,
    STEPS,
    HandedOut,
    World,
    make_people,
)

EXAMPLES = int(os.environ.get("DWF_STATEFUL_EXAMPLES", "100"))
STEPS_PER_EXAMPLE = int(os.environ.get("DWF_STATEFUL_STEPS", "40"))

# An example takes about half a second; shrinking a failure takes Hypothesis up to 5 min.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.timeout(600 + 2 * EXAMPLES)]

senders = st.sampled_from((*PEOPLE, "bot", "code"))  # who may send, more often
actors = st.sampled_from(("owner", "owner", "operator", "code", "stranger", "bot"))
# Every command; next, which moves an instance on, more often.
commands = st.sampled_from((*COMMANDS, "next", "next", "next"))
payloads = st.sampled_from((*PAYLOADS, {"v": 1}, {"v": 2}))  # valid ones more often
locks = st.sampled_from((False, False, True))
RAN: Counter[str] = Counter()  # examples and steps, said at the end


class ServiceMachine(RuleBasedStateMachine):
    """One world per example; its rules are the world's, its invariants the checks."""

    people: ClassVar[dict[str, Any]] = {}
    instances = Bundle("instances")

    def __init__(self) -> None:
        super().__init__()
        RAN["examples"] += 1
        self.world = World(self.people)
        self._closing = self.world.opened()
        self._closing.__enter__()

    def teardown(self) -> None:
        self._closing.__exit__(None, None, None)

    def _acting(self) -> World:
        """The world, before a rule acts in it (the last rule may have been a sweep)."""
        self.world.swept_at = None
        RAN["steps"] += 1
        return self.world

    # -- rules ---------------------------------------------------------------------------

    @initialize(target=instances, count=st.integers(0, 2))
    def doomed_instances_wait_on_their_timers(self, count: int) -> Any:
        return multiple(*(self._acting().create(DOOMED) for _ in range(count)))

    @rule(target=instances, workflow=st.sampled_from((FLOW, FLOW, FIRST)),
          key=st.sampled_from(KEYS), locked=locks,
          reference=st.sampled_from((None, *REFERENCES)), start=st.booleans(),
          by=st.sampled_from(("owner", "code")))
    def create(self, workflow: str, key: str, locked: bool, reference: str | None,
               start: bool, by: str) -> Any:
        created = self._acting().create(workflow, key=key, locked=locked,
                                        reference=reference, start=start, by=by)
        return multiple() if created is None else created

    @rule(instance=instances, name=commands, by=actors, step=st.sampled_from(STEPS),
          input=st.sampled_from(INPUTS))
    def command(self, instance: str, name: str, by: str, step: str, input: Any) -> None:
        self._acting().command(instance, name, by=by, step=step, input=input)

    @rule(instance=instances, message_id=st.sampled_from(MESSAGE_IDS))
    def it_moves_on_as_its_people_and_workers_would(self, instance: str,
                                                     message_id: str | None) -> None:
        self._acting().move_on(instance, message_id)

    @rule(instance=instances, key=st.sampled_from(KEYS), locked=locks, by=actors)
    def update_state(self, instance: str, key: str, locked: bool, by: str) -> None:
        self._acting().update_state(instance, key=key, locked=locked, by=by)

    @rule(data=st.data(), by=senders, payload=payloads,
          message_id=st.sampled_from(MESSAGE_IDS),
          address=st.sampled_from(("instance", "instance", "reference", "correlation")))
    def signal(self, data: st.DataObject, by: str, payload: Any, message_id: str | None,
               address: str) -> None:
        world = self._acting()
        workflow = data.draw(st.sampled_from(SIGNALLED), label="workflow")
        if address == "instance" and world.instances:
            to = data.draw(st.sampled_from(list(world.instances)), label="instance")
            if data.draw(st.booleans(), label="to its own workflow"):
                workflow = world.instances[to]  # sf-doomed waits for no signal: refused
            world.signal(workflow, instance=to, by=by, payload=payload, message_id=message_id)
        elif address == "reference":
            world.signal(workflow, reference=data.draw(st.sampled_from(REFERENCES),
                                                       label="reference"),
                         by=by, payload=payload, message_id=message_id)
        else:
            world.signal(workflow, correlation=data.draw(st.sampled_from(KEYS),
                                                         label="correlation"),
                         by=by, payload=payload, message_id=message_id)

    @precondition(lambda self: HandedOut.tokens)
    @rule(data=st.data(), outcome=st.sampled_from(("ok", "ok", "fail")))
    def a_worker_runs_a_handed_out_attempt(self, data: st.DataObject, outcome: str) -> None:
        token = data.draw(st.sampled_from(_queued_first()), label="token")
        self._acting().run_worker(token, outcome=outcome)

    @precondition(lambda self: HandedOut.tokens)
    @rule(data=st.data())
    def a_worker_dies_mid_attempt(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(_queued_first()), label="token")
        self._acting().worker_dies(token)

    @precondition(lambda self: self.world.stalled)
    @rule(data=st.data(), ok=st.booleans())
    def a_stalled_worker_reports_late(self, data: st.DataObject, ok: bool) -> None:
        token = data.draw(st.sampled_from(sorted(self.world.stalled)), label="token")
        self._acting().stalled_worker_reports(token, ok=ok)

    @rule(seconds=st.sampled_from(SECONDS))
    def time_passes_and_the_sweep_runs(self, seconds: float) -> None:
        self._acting().sweep(seconds)

    @precondition(lambda self: self.world.doomed_registered and not self.world.deploys)
    @rule()
    def a_deploy_removes_the_doomed_workflow(self) -> None:
        self._acting().remove_doomed()

    @precondition(lambda self: not self.world.doomed_registered and self.world.deploys < 2)
    @rule()
    def a_deploy_brings_it_back(self) -> None:
        self._acting().bring_doomed_back()

    @precondition(lambda self: SweepFailure.objects.filter(quarantined_at__isnull=False)
                  .exists())
    @rule()
    def an_operator_retries_what_was_set_aside(self) -> None:
        self._acting().retry_set_aside()

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def every_check_holds(self) -> None:
        """The checks of ``tests/stateful_checks.py``, each named by what broke."""
        rows = checks.read()
        found = {name: check(self.world, rows) for name, check in checks.CHECKS.items()}
        broken = "\n".join(f"{name}: {line}" for name, lines in found.items() for line in lines)
        assert not broken, broken


def _queued_first() -> list[str]:
    """The tokens handed out, those still queued first (a worker would run them now), then
    the rest (a broker that delivers again, late)."""
    handed = list(dict.fromkeys(HandedOut.tokens))
    queued = set(Attempt.objects.filter(token__in=handed, status=AttemptStatus.QUEUED)
                 .values_list("token", flat=True))
    return [t for t in handed if t in queued] + [t for t in handed if t not in queued]


def test_the_services_keep_every_invariant_whatever_happens_in_any_order(capsys: Any) -> None:
    ServiceMachine.people = make_people()
    RAN.clear()
    began = time.monotonic()
    try:
        run_state_machine_as_test(ServiceMachine, settings=settings(
            max_examples=EXAMPLES, stateful_step_count=STEPS_PER_EXAMPLE, deadline=None,
            database=None, print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    finally:
        with capsys.disabled():
            print(f"\nstateful: {RAN['examples']} examples, {RAN['steps']} steps in "
                  f"{time.monotonic() - began:.0f} s")
