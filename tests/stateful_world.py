"""A small world for the stateful tests of the service layer (issue 36): its workflows, its
people, a fake clock, a runner whose workers never come, and the rules that act in it.

- ``sf-flow``: ``form`` (a manual step), ``await`` (the signal "go" by correlation on the
  state's ``key``, from bots, with a schema and a 120 s timeout), ``work`` (an auto step
  whose operation is held to ``Limit("k", max=1)``, one retry 30 s later, a 90 s timeout),
  ``rest`` (a 60 s timer), ``end``. A tenant rule refuses every signal to an instance whose
  state says ``"locked": True``.
- ``sf-first``: ``listen`` waits for the same signal, which the first waiting instance
  takes (``fan_out="first"``), then ``review``, a task for the bots (due in an hour).
- ``sf-doomed``: a 60 s timer, of a workflow a deploy removes (and may bring back).

People: ``owner`` creates and moves instances, ``operator`` has the change permission,
``bot`` is in the senders' group, ``stranger`` has no right at all; ``code`` is trusted code
(no user). The runner only keeps the tokens handed to it: the rules play the workers (one
runs an attempt, one claims it and dies, one that stalled reports late) and the sweeper
(the clock moves on, then one sweep). Each rule asserts what the service's answer must be
there and then; ``tests/stateful_checks.py`` says what must hold of the rows after it.
``tests/services/test_stateful.py`` draws the rules with Hypothesis;
``tests/services/test_stateful_threads.py`` runs them at random in threads on PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.test import override_settings

from django_workflows import (
    Limit,
    Operation,
    Signal,
    Step,
    Task,
    Timer,
    Transition,
    Workflow,
    clock,
    registry,
    services,
)
from django_workflows.engine import AttemptOutcome
from django_workflows.exceptions import (
    Busy,
    InstanceNotFound,
    NotAllowed,
    ReferenceTaken,
    UnknownSignal,
    UnknownWorkflow,
    WorkflowNotMoved,
)
from django_workflows.models import (
    Attempt,
    AttemptStatus,
    IdempotencyKey,
    LimitedKey,
    SweepFailure,
    SweepLease,
    WorkflowInstance,
    WorkflowSignal,
)
from django_workflows.runners.worker import run_attempt
from django_workflows.services.attempts import Claimed
from django_workflows.testing import FakeClock
from tests.factories import UserFactory

BOTS = "sf-bots"
KEY = "k"  # the Limit's key of sf-flow's operation
GO = {"type": "object", "required": ["v"],
      "properties": {"v": {"type": "integer", "minimum": 1}}}
REVIEW = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
INPUTS = ({"ok": True}, {"ok": False}, {"ok": "yes"})  # the last breaks the form
KEYS = ("a", "b")  # correlations
REFERENCES = ("r1", "r2")
MESSAGE_IDS = (None, "m1", "m2", "m3")
PAYLOADS = ({"v": 1}, {"v": 2}, {"v": 0}, "junk")  # the last two break the schema
PEOPLE = ("code", "owner", "operator", "bot", "stranger")
MAY_NEVER_SEND = ("owner", "stranger")  # not named in senders, no change permission
SECONDS = (1, 30, 61, 61, 3700)  # how far the clock moves before a sweep
COMMANDS = ("start", "next", "back", "skip", "skip_operation", "validate", "retry", "cancel",
            "rollback", "pause", "resume", "rewind", "claim", "release", "complete")
STEPS = ("form", "await", "work", "rest", "end", "listen", "review", "done", "wait", "after")
FLOW, FIRST, DOOMED = "sf-flow", "sf-first", "sf-doomed"
SIGNALLED = (FLOW, FIRST)
# The refusals the services answer with; anything else they raise is a bug.
REFUSALS = (WorkflowNotMoved, NotAllowed, InstanceNotFound, Busy, UnknownWorkflow)

SETTINGS = {
    "RUNNER": "tests.stateful_world.HandedOut",
    "HEARTBEAT_TIMEOUT": 60.0,
    "SWEEP_INTERVAL": 5.0,
    "SWEEP_RETRIES": 2,  # so items are set aside within a few sweeps
    "LOCK_TIMEOUT": 1.0,
    "CANCEL_LOCK_TIMEOUT": 5.0,
    "REDISPATCH_AFTER": 120.0,
    "SIGNAL_RETENTION": 4000.0,  # a kept signal expires after a sweep or two of 3700 s
}


# -- the workflows ------------------------------------------------------------------------


def tenant_rule(user: Any, instance: Any, action: str) -> bool:
    """Nobody signals an instance whose tenant is locked (code is not asked)."""
    return not (action == "signal" and instance is not None and instance.state.get("locked"))


def correlation_of(ctx: Any) -> str:
    return str(ctx.state["key"])


class Workers(threading.local):
    """What the worker playing now was told: the token it runs, and how its code ends."""

    token: str | None = None
    outcome: str = "ok"
    seconds: float = 0.0  # how long its code takes (threads)


worker = Workers()
code_runs: Counter[str] = Counter()  # token: how often its operation's code ran
_runs_lock = threading.Lock()


def runs_of_code() -> dict[str, int]:
    """``code_runs`` as it is now (threads add to it)."""
    with _runs_lock:
        return dict(code_runs)


def run_operation(ctx: Any) -> dict[str, Any]:
    with _runs_lock:
        code_runs[worker.token or "?"] += 1
    if worker.seconds:
        time.sleep(worker.seconds)
    if worker.outcome == "fail":
        raise RuntimeError("the provider said no")
    return {"by": worker.token}


flow = Workflow(
    id=FLOW, initial={"key": "a", "locked": False}, permission=tenant_rule,
    steps=[Step("form"),
           Step("await", wait=Signal("go", correlate=correlation_of, senders=[f"group:{BOTS}"],
                                     schema=GO, timeout=120)),
           Step("work", advance="auto", operations=[
               Operation("op", run=run_operation, retries=1, retry_delay=30, timeout=90,
                         concurrency=Limit(KEY, max=1))]),
           Step("rest", wait=Timer(after=60)),
           Step("end")],
    transitions=[Transition("form", "await"), Transition("await", "work"),
                 Transition("work", "rest"), Transition("rest", "end")],
)
first = Workflow(
    id=FIRST, initial={"key": "a", "locked": False}, permission=tenant_rule,
    steps=[Step("listen", wait=Signal("go", correlate=correlation_of, senders=[f"group:{BOTS}"],
                                      schema=GO, fan_out="first")),
           Step("review", task=Task(form=REVIEW, candidates=[f"group:{BOTS}"], due=3600)),
           Step("done")],
    transitions=[Transition("listen", "review"), Transition("review", "done")],
)
doomed = Workflow(id=DOOMED, steps=[Step("wait", wait=Timer(after=60)), Step("after")],
                  transitions=[Transition("wait", "after")])
WORKFLOWS = (flow, first, doomed)


class HandedOut:
    """A runner whose workers never come: it keeps the tokens handed to it, in order."""

    tokens: list[str] = []  # one list for the process, as a broker's queue

    def enqueue(self, tokens: Sequence[str]) -> None:
        HandedOut.tokens.extend(tokens)


def make_people() -> dict[str, Any]:
    """The users of the world (``code`` is None: trusted code)."""
    bots = Group.objects.get_or_create(name=BOTS)[0]
    bot = UserFactory(username="sf-bot")
    bot.groups.add(bots)
    operator = UserFactory(username="sf-operator")
    operator.user_permissions.add(Permission.objects.get(codename="change_workflowinstance"))
    people = {"code": None, "owner": UserFactory(username="sf-owner"),
              "stranger": UserFactory(username="sf-stranger")}
    model = type(bot)
    people["bot"] = model.objects.get(pk=bot.pk)  # no permission cache from before
    people["operator"] = model.objects.get(pk=operator.pk)
    return people


def clean_tables() -> None:
    """Nothing left of an earlier run (its users stay)."""
    for model in (WorkflowSignal, SweepFailure, WorkflowInstance, LimitedKey, SweepLease,
                  IdempotencyKey):
        model.objects.all().delete()


# -- the world --------------------------------------------------------------------------


@dataclass
class Sent:
    """A signal the service answered without raising: what it said."""

    workflow: str
    message_id: str | None
    row: int  # the signal's row (the first delivery's, for a repeat)
    kept: bool
    repeated: bool
    taken_by: list[str]


@dataclass
class World:
    people: Mapping[str, Any]
    strict: bool = True  # one actor at a time: each answer is checked against the rows too
    settings: Mapping[str, Any] = field(default_factory=lambda: SETTINGS)
    clock: FakeClock = field(default_factory=lambda: FakeClock(time.time()))
    instances: dict[str, str] = field(default_factory=dict)  # id: workflow, in creation order
    locked: dict[str, list[tuple[int, bool]]] = field(default_factory=dict)  # id: (from rev, v)
    sent: list[Sent] = field(default_factory=list)
    stalled: dict[str, Claimed] = field(default_factory=dict)  # claimed by a worker that died
    swept_at: datetime | None = None  # the time of the sweep the last rule ran, if it was one
    doomed_registered: bool = True
    deploys: int = 0  # how often sf-doomed was removed or brought back
    seen: dict[str, tuple[int, int, Any]] = field(default_factory=dict)  # checks' memory
    refused: Counter[str] = field(default_factory=Counter)  # refusals by kind, for the record
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def opened(self) -> Iterator[World]:
        """The world's settings, clock and workflows in force; its rows gone after."""
        with ExitStack() as stack:
            clean_tables()
            stack.callback(clean_tables)
            HandedOut.tokens.clear()
            with _runs_lock:
                code_runs.clear()
            stack.enter_context(override_settings(DJANGO_WORKFLOWS=self.settings))
            clock.use(self.clock.now)
            stack.callback(clock.use, None)
            for definition in WORKFLOWS:
                registry.register(definition, origin=__name__)
                stack.callback(registry.unregister, definition.id)
            yield self

    # -- instances -----------------------------------------------------------------------

    def instance_ids(self) -> list[str]:
        with self._lock:  # threads add to it
            return list(self.instances)

    def stalled_tokens(self) -> list[str]:
        with self._lock:
            return sorted(self.stalled)

    def note_locked(self, instance: WorkflowInstance, since: int | None = None) -> None:
        """Whether the instance is locked from its revision on (``since``; what the tenant
        rule reads)."""
        with self._lock:
            self.locked.setdefault(str(instance.pk), []).append(
                (instance.revision if since is None else since,
                 bool(instance.state.get("locked"))))

    def locked_at(self, instance_id: str, revision: int) -> bool:
        known = sorted(self.locked.get(instance_id, []))  # threads note them in any order
        return next((locked for since, locked in reversed(known) if since <= revision), False)

    def create(self, workflow: str, *, key: str = "a", locked: bool = False,
               reference: str | None = None, start: bool = True, by: str = "owner"
               ) -> str | None:
        """A new instance; None when its reference was taken (which it must have been)."""
        state = {"key": key, "locked": locked} if workflow != DOOMED else None
        try:
            row = services.create(workflow, state=state, start=start, reference=reference,
                                  user=self.people[by], owner=self.people["owner"])
        except ReferenceTaken:
            assert reference is not None and WorkflowInstance.objects.filter(
                workflow=workflow, reference=reference).exists(), \
                f"create of {workflow} refused a reference nobody has: {reference}"
            return None
        with self._lock:
            self.instances[str(row.pk)] = workflow
        self.note_locked(row, since=0)
        return str(row.pk)

    def command(self, instance_id: str, name: str, *, by: str, step: str = "form",
                input: Any = None) -> None:
        """A command as ``by``; refused as the rules say, and never for a stranger's good."""
        options: dict[str, Any] = {"step": step} if name == "rewind" else {}
        if name == "complete":
            options["input"] = input
        try:
            row = services.command(instance_id, name, user=self.people[by], **options)
        except REFUSALS as refusal:
            self._refused(refusal)
            if by == "stranger":
                assert isinstance(refusal, InstanceNotFound | Busy), \
                    f"a stranger's {name} was answered {refusal!r}, not 'not found'"
            return
        self.note_locked(row)  # a rollback gives the instance its initial state again
        assert by != "stranger", f"a stranger's {name} moved instance {instance_id}"
        assert not (by == "owner" and name in ("pause", "resume")), \
            f"the owner, no operator, was let {name} instance {instance_id}"

    def hold_row(self, instance_id: str, seconds: float) -> None:
        """A slow command holds the instance's row lock for ``seconds`` (threads: the others
        meet a busy row)."""
        with transaction.atomic():
            if WorkflowInstance.objects.select_for_update().filter(pk=instance_id).exists():
                time.sleep(seconds)

    def _refused(self, refusal: Exception) -> None:
        with self._lock:
            self.refused[getattr(refusal, "code", None) or type(refusal).__name__] += 1

    def update_state(self, instance_id: str, *, key: str, locked: bool, by: str) -> None:
        try:
            row = services.update_state(
                instance_id, lambda state: {**state, "key": key, "locked": locked},
                user=self.people[by])
        except REFUSALS:
            return
        self.note_locked(row)

    # -- signals -------------------------------------------------------------------------

    def signal(self, workflow: str, *, by: str, payload: Any, message_id: str | None,
               instance: str | None = None, reference: str | None = None,
               correlation: str | None = None) -> None:
        """A signal "go" as ``by``: refused before anything for who may never send it; one
        that raised leaves no row behind; a repeat from another sender changes nothing."""
        rows_before = self._signal_rows() if self.strict else None
        revisions_before = self._revisions() if self.strict else None
        first = WorkflowSignal.objects.filter(workflow=workflow, name="go",
                                              message_id=message_id).first() \
            if message_id else None
        try:
            sent = services.signal(workflow, "go", payload, instance=instance,
                                   reference=reference, correlation=correlation,
                                   message_id=message_id, user=self.people[by])
        except Busy as busy:
            self._refused(busy)
            return  # kept: the sweep hands it over
        except (NotAllowed, WorkflowNotMoved, InstanceNotFound, UnknownSignal,
                UnknownWorkflow) as refusal:
            if isinstance(refusal, UnknownSignal | UnknownWorkflow):
                assert workflow == DOOMED, f"signal to {workflow} refused as {refusal!r}"
            if rows_before is not None:
                assert self._signal_rows() == rows_before, \
                    f"a signal refused ({refusal!r}) left its row behind or changed another"
            return
        assert by not in MAY_NEVER_SEND, f"the {by}'s signal was accepted: {sent}"
        assert sent.signal.pk is not None, f"an accepted signal has no row: {sent}"
        if first is not None:
            assert sent.repeated and sent.signal.pk == first.pk, \
                f"message {message_id} came before, but the answer is no repeat: {sent}"
            other = (first.sender_id, first.payload) != (getattr(self.people[by], "pk", None),
                                                          payload)
            if other and revisions_before is not None:
                assert self._revisions() == revisions_before, \
                    f"a repeat of {message_id} from another sender or with another payload " \
                    "moved an instance"
        with self._lock:
            self.sent.append(Sent(workflow, message_id, sent.signal.pk, sent.kept,
                                  sent.repeated, [str(row.pk) for row in sent.taken_by]))

    @staticmethod
    def _signal_rows() -> dict[int, tuple[str, list[str]]]:
        return {pk: (status, list(taken_by)) for pk, status, taken_by in
                WorkflowSignal.objects.values_list("pk", "status", "taken_by")}

    @staticmethod
    def _revisions() -> dict[str, int]:
        return {str(pk): revision for pk, revision in
                WorkflowInstance.objects.values_list("pk", "revision")}

    # -- workers ---------------------------------------------------------------------------

    def run_worker(self, token: str, *, outcome: str = "ok", seconds: float = 0.0) -> None:
        """A worker is handed ``token`` (again, maybe: a broker delivers twice) and runs it."""
        worker.token, worker.outcome, worker.seconds = token, outcome, seconds
        runs = code_runs[token]
        try:
            ran = run_attempt(token, heartbeat_thread=False)
        except Busy as busy:
            self._refused(busy)
            return  # its result is kept on its row: the sweep applies it
        finally:
            worker.token = None
        if not ran and self.strict:
            assert code_runs[token] == runs, f"attempt {token} was refused, yet its code ran"

    def worker_dies(self, token: str) -> None:
        """A worker claims ``token`` and is never heard of again (unless it reports late)."""
        claimed = services.claim_attempt(token, worker="dies")
        if claimed is not None:
            with self._lock:
                self.stalled[token] = claimed

    def stalled_worker_reports(self, token: str, *, ok: bool = True) -> None:
        """A worker that stalled (not dead after all) reports: too late, if the sweep
        interrupted its attempt meanwhile, and then its result is dropped."""
        with self._lock:
            claimed = self.stalled.pop(token, None)
        if claimed is None:
            return
        status = Attempt.objects.filter(token=token).values_list("status", flat=True).first()
        outcome = AttemptOutcome(ok=True, value={"by": "late"}) if ok else AttemptOutcome(
            ok=False)
        try:
            finished = services.finish_claimed(claimed, outcome)
        except Busy:
            return
        if self.strict and status != AttemptStatus.RUNNING:
            assert not finished, f"the late result of attempt {token} ({status}) was applied"

    def move_on(self, instance_id: str, message_id: str | None = None) -> None:
        """What the instance waits for comes, as its people and workers would give it: the
        owner's next, the bot's signal, a worker for its queued attempt, a timer's time."""
        row = WorkflowInstance.objects.filter(pk=instance_id).first()
        if row is None:
            return
        waiting = row.snap.waiting
        if row.status == "idle":
            self.command(instance_id, "start", by="owner")
        elif row.status in ("failed", "blocked"):
            self.command(instance_id, "retry", by="owner")
        elif row.status == "paused":
            self.command(instance_id, "resume", by="operator")
        elif waiting is not None and waiting.kind == "signal" and waiting.arrived is None:
            self.signal(row.workflow, instance=instance_id, by="bot", payload={"v": 1},
                        message_id=message_id)
        elif waiting is not None and waiting.kind == "timer" and waiting.arrived is None:
            self.sweep(61)
        elif row.snap.open_task is not None:
            self.command(instance_id, "complete", by="bot", input={"ok": True})
        else:
            queued = Attempt.objects.filter(instance_id=instance_id,
                                            status=AttemptStatus.QUEUED).values_list(
                "token", flat=True).first()
            if queued is not None:
                self.run_worker(queued)
            else:
                self.command(instance_id, "next", by="owner")

    # -- time and the sweep ------------------------------------------------------------------

    def sweep(self, seconds: float) -> datetime:
        """The clock moves on ``seconds``, then one sweep runs at that time."""
        with self._lock:
            self.clock.advance(seconds)
            now = clock.now_datetime()
        services.sweep(now=now)
        self.swept_at = now
        return now

    def remove_doomed(self) -> None:
        """A deploy removes ``sf-doomed``: its instances' timers can no longer fire."""
        registry.unregister(DOOMED)
        self.doomed_registered, self.deploys = False, self.deploys + 1

    def bring_doomed_back(self) -> None:
        registry.register(doomed, origin=__name__)
        self.doomed_registered, self.deploys = True, self.deploys + 1

    def retry_set_aside(self) -> None:
        """An operator tries again what the sweep set aside."""
        services.retry_set_aside(SweepFailure.objects.filter(quarantined_at__isnull=False))
