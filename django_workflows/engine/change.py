"""What one command changes: an instance's snapshot, and what the command collects.

A :class:`Change` holds one instance's snapshot as the rules replace it
(snapshots are frozen) and what the whole command collects (:class:`Collected`:
events, effects, children let go, the move budget). A nested child gets a
Change of its own that shares them (:meth:`Change.child`). The rules (``engine/rules/``) are
plain functions of a Change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .bounds import MAX_MOVES
from .context import HookContext, call_directly
from .definition import Step, Workflow
from .errors import Allowed, DefinitionError, HookFailed, error_message
from .events import EventName
from .messages import missing_key
from .outcome import ClearDeadline, Effect, Event, KeptSignal
from .snapshot import WorkflowSnapshot


@dataclass(frozen=True)
class Env:
    """What a command needs from outside: the time, ids, the user, how to call hooks."""

    now: float
    call: Callable[..., Any] = call_directly
    new_token: Callable[[], str] = lambda: uuid.uuid4().hex
    new_id: Callable[[], str] = lambda: str(uuid.uuid4())
    user: Any = None
    resolve: Callable[[str], Workflow] | None = None  # a workflow by id, for nested="id"
    actor: str | None = None  # who acts, as the service names them (a user's id): tasks record it
    # The oldest signal kept for a step that starts waiting, whose sender may send it there:
    # (instance id, step id, signal name, correlation).
    kept_signal: Callable[[str, str, str, str | None], KeptSignal | None] = lambda *_: None
    # How many entries an operation's journal holds (durable code): (instance id, its key).
    journal_length: Callable[[str, str], int] = lambda *_: 0


@dataclass
class Collected:
    """What one command collects across the instances of a tree."""

    events: list[Event] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    # Children let go in this command (replaced, or reset by a rollback): saved all the same.
    detached: list[WorkflowSnapshot] = field(default_factory=list)
    moves: int = 0


class Change:
    """One instance being changed by one command.

    In a dry run (``dry=True``) a rule stops where its checks end
    (:meth:`checked` raises :class:`Allowed`), so "what applies now" is
    answered by the very code that runs the command.
    """

    def __init__(self, definition: Workflow, snapshot: WorkflowSnapshot, env: Env, *,
                 dry: bool = False, collected: Collected | None = None) -> None:
        self.definition = definition
        self.snap = snapshot
        self.env = env
        self.dry = dry
        self.collected = collected or Collected()
        # The current step's work may move on (next operation, join, auto advance);
        # ``rules.steps.settle`` does it once the rule that asked for it returned.
        self.unsettled = False

    @property
    def name(self) -> str:
        return f'Workflow "{self.definition.id}"'

    @property
    def step(self) -> Step | None:
        """The definition of the current step (None before the first one)."""
        key = self.snap.current_step
        return self.definition.steps_by_id.get(key) if key else None

    @property
    def events(self) -> list[Event]:
        return self.collected.events

    def set(self, **changes: Any) -> None:
        self.snap = self.snap.changed(**changes)

    def emit(self, type_: EventName, step: str | None = None, error: str | None = None, *,
             at: float | None = None, **data: Any) -> None:
        self.collected.events.append(Event(type=type_, instance_id=self.snap.id, step=step,
                                           error=error, data=data,
                                           at=self.env.now if at is None else at))

    def effect(self, effect: Effect) -> None:
        self.collected.effects.append(effect)

    def new_token(self) -> str:
        return self.env.new_token()

    def checked(self, confirm: str | None = None) -> None:
        """Where a rule's checks end: nothing before this may run a hook with effects.

        ``confirm``: why a person should confirm it first (the admin asks, the API's
        ``actions`` say it).
        """
        if self.dry:
            raise Allowed(confirm)

    def count_move(self) -> None:
        self.collected.moves += 1
        if self.collected.moves > MAX_MOVES:
            message = (f"{self.name} moved through more than {MAX_MOVES} steps in one command; "
                       f"check its transitions for a cycle")
            self.fail(message, self.snap.current_step)
            raise HookFailed(message)

    def context(self, step: str | None = None) -> HookContext:
        return HookContext(state=self.snap.state, instance_id=self.snap.id,
                           workflow=self.definition.id,
                           step=step if step is not None else self.snap.current_step,
                           user=self.env.user)

    def run_hook(self, hook: Callable[..., Any], *args: Any, step: str | None, what: str
                 ) -> Any:
        """Call a user hook; if it raises, record the failure and stop the command.

        ``what`` names the hook (``The enter hook of step "x"``) where its own message
        does not say enough: a KeyError's is only the key.
        """
        try:
            return self.env.call(hook, *args)
        except Exception as error:
            message = missing_key(what, error) or error_message(error)
            self.fail(message, step)
            raise HookFailed(message) from error

    def probe_hook(self, hook: Callable[..., Any], *args: Any, what: str) -> tuple[bool, Any]:
        """Call a hook whose failure refuses the command instead of failing the workflow.

        On failure, the second value is the refusal's message.
        """
        try:
            return True, self.env.call(hook, *args)
        except Exception as error:
            return False, missing_key(what, error) or f"{what} raised: {error_message(error)}"

    def fail(self, message: str, step: str | None, errors: tuple[str, ...] | None = None,
             **data: Any) -> None:
        """Record a failure: status ``failed``, the message in ``errors``, event ``error``."""
        self.end_step_run()
        self.set(status="failed", errors=errors if errors is not None else (message,))
        self.emit("error", step=step, error=message, **data)

    def end_step_run(self) -> None:
        """The current step's work is over: its timeout no longer applies."""
        run = self.snap.step_run
        if run is not None:
            if run.deadline is not None:
                self.effect(ClearDeadline(self.snap.id, run.token))
            self.set(step_run=None)

    # -- the nested child -----------------------------------------------------------

    @property
    def current_child(self) -> WorkflowSnapshot | None:
        """The nested instance of the current step, if it has one."""
        child = self.snap.nested
        if child is not None and child.parent_step == self.snap.current_step:
            return child
        return None

    def nested_definition(self, step: Step) -> Workflow:
        nested = step.nested
        if isinstance(nested, Workflow):
            return nested
        if self.env.resolve is None or nested is None:
            raise DefinitionError(f'Step "{step.id}": cannot resolve nested workflow {nested!r}')
        return self.env.resolve(nested)

    def child(self) -> Change:
        """A Change of the nested child, sharing this command's events, effects and budget."""
        child = self.snap.nested
        assert child is not None and child.parent_step is not None
        definition = self.nested_definition(self.definition.step(child.parent_step))
        return Change(definition, child, self.env, dry=self.dry, collected=self.collected)

    def let_go_of_child(self) -> None:
        """Detach the nested child (its row stays, with its last snapshot and events)."""
        if self.snap.nested is not None:
            self.collected.detached.append(self.snap.nested)
            self.set(nested=None)

    @contextmanager
    def on_child(self) -> Iterator[Change]:
        """Work on the nested child; its snapshot is put back here, whatever happens."""
        child = self.child()
        try:
            yield child
        finally:
            self.set(nested=child.snap)
