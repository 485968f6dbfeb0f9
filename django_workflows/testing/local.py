"""An in-process executor of the pure engine: instances in memory, effects carried out at once.

It runs a whole workflow (operations, retries, branches, nested children,
timeouts with a fake clock, rollback) inside a unit test, with no database
and no worker. With ``autorun=False`` attempts wait in :attr:`pending` until
the test claims and runs them, which is how late results and timeouts are
tested.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec

from ..engine import (
    AttemptFinished,
    AttemptInterrupted,
    AttemptOutcome,
    AttemptStarted,
    Back,
    Cancel,
    ClearDeadline,
    Command,
    Complete,
    DeadlineDue,
    Effect,
    Env,
    Event,
    KeptSignal,
    MemoryJournal,
    Next,
    Outcome,
    Pause,
    Progress,
    ReceiveSignal,
    Release,
    Resume,
    Retry,
    Rewind,
    Rollback,
    RunAttempt,
    SetDeadline,
    Skip,
    SkipOperation,
    Start,
    StopAttempt,
    TakeSignal,
    TruncateJournal,
    UpdateState,
    Validate,
    Work,
    Workflow,
    WorkflowSnapshot,
    apply,
    definitions_of,
    deliver,
    execute,
    find_work,
    new_instance,
)
from .clock import FakeClock

P = ParamSpec("P")


class _Applied(Generic[P]):
    """A declared command as the executor applies it: ``executor.cancel(id, reason=...)``,
    typed as the command's own fields are."""

    def __init__(self, declared: Callable[P, Command]) -> None:
        self.declared = declared

    def __get__(self, executor: LocalExecutor | None, owner: type | None = None
                ) -> Callable[Concatenate[str, P], Outcome]:
        def apply_it(instance_id: str, /, *args: P.args, **values: P.kwargs) -> Outcome:
            assert executor is not None
            return executor.command(instance_id, self.declared(*args, **values))

        return apply_it


@dataclass
class LiveAttempt:
    """What a claimed attempt reported so far (as a worker's heartbeat row would hold)."""

    run: RunAttempt
    work: Work | None = None  # what the token names, loaded when it was claimed
    status: str = "running"
    progress: Progress | None = None
    logs: list[str] = field(default_factory=list)
    stop_reason: str | None = None


class _Sink:
    def __init__(self, executor: LocalExecutor, live: LiveAttempt) -> None:
        self.executor = executor
        self.live = live

    def now(self) -> float:
        return self.executor.clock.now()

    def sleep(self, seconds: float) -> None:
        self.executor.clock.sleep(seconds)

    def stop_reason(self) -> str | None:
        return self.live.stop_reason

    def report(self, *, status: str | None, progress: Progress | None,
               logs: list[str]) -> None:
        if status:
            self.live.status = status
        if progress:
            self.live.progress = progress
        self.live.logs.extend(logs)


class LocalExecutor:
    """Instances of some workflows, kept in memory and driven by commands."""

    def __init__(self, *definitions: Workflow, clock: FakeClock | None = None, autorun: bool = True,
                 user: Any = None, actor: str | None = None,
                 call: Callable[..., Any] | None = None,
                 observers: tuple[Callable[[Event], Any], ...] = ()) -> None:
        self.definitions = {d.id: d for d in definitions}
        self.clock = clock or FakeClock()
        self.autorun = autorun
        self.user = user
        self.actor = actor  # who acts, as tasks record it
        self.call = call
        self.observers = observers
        self.roots: dict[str, WorkflowSnapshot] = {}  # root id -> tree
        self.root_of: dict[str, str] = {}  # any instance id -> its root id
        self.detached: dict[str, WorkflowSnapshot] = {}  # children let go of, as they ended
        self.events: list[Event] = []
        self.pending: list[RunAttempt] = []  # attempts not yet claimed
        self.live: dict[str, LiveAttempt] = {}  # claimed attempts not yet finished
        self.deadlines: dict[tuple[str, str], SetDeadline] = {}  # by (token, kind)
        self.observer_errors: list[BaseException] = []
        self.journal = MemoryJournal()  # durable code's steps, by journal
        # Signals kept for a step that does not wait yet: (signal, name, instance, correlation).
        self.kept: list[tuple[KeptSignal, str, str | None, str | None]] = []
        self._busy = False  # work runs only from the outermost command

    # -- instances ----------------------------------------------------------

    def env(self) -> Env:
        extra = {"call": self.call} if self.call else {}
        return Env(now=self.clock.now(), user=self.user, actor=self.actor,
                   resolve=self.definitions.__getitem__, kept_signal=self._kept_signal,
                   journal_length=lambda _, key: len(self.journal.entries(key)), **extra)

    def keep_signal(self, name: str, payload: Any = None, *, instance_id: str | None = None,
                    correlation: str | None = None, message_id: str | None = None) -> None:
        """A signal that came before its step waited: the step takes it when it waits."""
        signal = KeptSignal(len(self.kept), payload, message_id)
        self.kept.append((signal, name, instance_id, correlation))

    def _kept_signal(self, instance_id: str, step: str, name: str, correlation: str | None
                     ) -> KeptSignal | None:
        return next((signal for signal, kept_name, kept_instance, kept_correlation in self.kept
                     if kept_name == name and (kept_instance == instance_id or (
                         correlation is not None and kept_correlation == correlation))), None)

    def create(self, workflow: str | Workflow, state: Mapping[str, Any] | None = None) -> str:
        definition = workflow if isinstance(workflow, Workflow) else self.definitions[workflow]
        self.definitions.setdefault(definition.id, definition)
        snapshot = new_instance(definition, self.env(), state)
        self.roots[snapshot.id] = snapshot
        self.root_of[snapshot.id] = snapshot.id
        return snapshot.id

    def snapshot(self, instance_id: str) -> WorkflowSnapshot:
        root = self.roots[self.root_of[instance_id]]
        found = root.find_child(instance_id) or self.detached.get(instance_id)
        if found is None:
            raise KeyError(f"Instance {instance_id} is no longer part of its workflow")
        return found

    def events_of(self, instance_id: str) -> list[Event]:
        return [e for e in self.events if e.instance_id == instance_id]

    # -- commands -----------------------------------------------------------

    def command(self, instance_id: str, command: Command) -> Outcome:
        root_id = self.root_of[instance_id]
        root = self.roots[root_id]
        definition = self.definitions[root.workflow]
        outcome = apply(definition, root, command, self.env(), target=instance_id)
        self.roots[root_id] = outcome.snapshot
        for child in outcome.detached:  # let go of: still there to look at
            self.detached.update({node.id: node for node in child.tree()})
        for node in outcome.snapshot.tree():
            self.root_of[node.id] = root_id
        self.events.extend(outcome.events)
        by_id = definitions_of(definition, outcome.snapshot, self.definitions.__getitem__)
        for event in outcome.events:
            event_definition = by_id.get(event.instance_id, definition)
            self.observer_errors += deliver(event_definition, [event], self.observers)
        for effect in outcome.effects:
            self.carry_out(effect)
        if self.autorun and not self._busy:
            self.run_pending()
        return outcome

    # One per declared command; ``claim`` is an attempt's (below): a task's claim is
    # ``command(id, Claim())``.
    start = _Applied(Start)
    next = _Applied(Next)
    back = _Applied(Back)
    rewind = _Applied(Rewind)
    skip = _Applied(Skip)
    skip_operation = _Applied(SkipOperation)
    validate = _Applied(Validate)
    retry = _Applied(Retry)
    pause = _Applied(Pause)
    resume = _Applied(Resume)
    cancel = _Applied(Cancel)
    rollback = _Applied(Rollback)
    update_state = _Applied(UpdateState)
    release = _Applied(Release)
    complete = _Applied(Complete)
    signal = _Applied(ReceiveSignal)  # a signal delivered: executor.signal(id, "paid", {...})

    # -- effects ------------------------------------------------------------

    def carry_out(self, effect: Effect) -> None:
        if isinstance(effect, RunAttempt):
            self.pending.append(effect)
        elif isinstance(effect, StopAttempt):
            self.pending = [p for p in self.pending if p.token != effect.token]
            if effect.token in self.live:
                self.live[effect.token].stop_reason = effect.reason
        elif isinstance(effect, SetDeadline):
            self.deadlines[effect.token, effect.kind] = effect
        elif isinstance(effect, ClearDeadline):
            self.deadlines = {k: d for k, d in self.deadlines.items() if d.token != effect.token}
        elif isinstance(effect, TakeSignal) and effect.fate in ("taken", "refused"):
            self.kept = [kept for kept in self.kept if kept[0].id != effect.signal_id]
        elif isinstance(effect, TruncateJournal):  # a retry from a step: it runs again
            entries = self.journal.kept.get(effect.journal, {})
            for position in [p for p in entries if p >= effect.position]:
                del entries[position]

    def claim(self, token: str | None = None) -> str | None:
        """Claim a pending attempt (the oldest, or ``token``); None if it was refused."""
        run = next((p for p in self.pending if token is None or p.token == token), None)
        if run is None:
            return None
        self.pending.remove(run)
        outcome = self.command(run.instance_id, AttemptStarted(run.token))
        if not outcome.moved:
            return None
        root = self.roots[self.root_of[run.instance_id]]
        definitions = definitions_of(self.definitions[root.workflow], root,
                                     self.definitions.__getitem__)
        self.live[run.token] = LiveAttempt(run, work=find_work(definitions, root, run.token))
        return run.token

    def finish(self, token: str, flush_interval: float = 0.0) -> Outcome:
        """Run a claimed attempt's user code and report how it ended."""
        live = self.live[token]
        if live.work is None:
            outcome = AttemptOutcome(ok=False)
        else:
            outcome = execute(live.work, _Sink(self, live), user=self.user,
                              flush_interval=flush_interval, journal=self.journal)
        del self.live[token]
        return self.command(live.run.instance_id, AttemptFinished(token, outcome))

    def interrupt(self, token: str) -> Outcome:
        """As if the attempt's worker died: its heartbeat expired."""
        live = self.live.pop(token)
        return self.command(live.run.instance_id, AttemptInterrupted(token))

    def run_pending(self) -> None:
        """Claim and run every pending attempt, and what they lead to."""
        if self._busy:
            return
        self._busy = True
        try:
            while self.pending:
                token = self.claim()
                if token is not None:
                    self.finish(token)
        finally:
            self._busy = False

    def advance(self, seconds: float) -> None:
        """Move the clock, firing each deadline when it falls due."""
        end = self.clock.now() + seconds
        while True:
            due = sorted((d for d in self.deadlines.values() if d.at <= end), key=lambda d: d.at)
            if not due:
                break
            deadline = due[0]
            if deadline.at > self.clock.now():
                self.clock.advance(deadline.at - self.clock.now())
            del self.deadlines[deadline.token, deadline.kind]
            self.fire(deadline)
        if end > self.clock.now():
            self.clock.advance(end - self.clock.now())

    def fire(self, deadline: SetDeadline) -> Outcome:
        return self.command(deadline.instance_id, DeadlineDue(deadline.kind, deadline.token))

    def run_until_settled(self, max_seconds: float = 24 * 3600) -> None:
        """Run work and fire deadlines until nothing is left to do (or time is up)."""
        end = self.clock.now() + max_seconds
        while True:
            self.run_pending()
            if not self.deadlines:
                return
            first = min(d.at for d in self.deadlines.values())
            if first > end:
                return
            self.advance(max(first - self.clock.now(), 0))
