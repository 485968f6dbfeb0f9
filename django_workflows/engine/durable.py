"""The worker's side of durable code: ``ctx.step`` and the waits, replayed from the journal.

:class:`Replay` is one attempt's walk through its operation's journal
(``engine/journal.py``): the code's n-th call is compared with the journal's
n-th entry. Entries are read once, when the code first asks, and each new step
is recorded as soon as it returns (one write). Code running on an event loop
(``async def``) gets the same calls as awaitables: the journal is read and
written in a thread, as a database must not be used from the loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from .context import resolve
from .definition import Task, in_seconds
from .errors import Cancelled, WorkflowError
from .journal import (
    EntryKind,
    JournalEntry,
    JournalStore,
    MemoryJournal,
    Suspend,
    Suspension,
    WaitTimedOut,
    mismatch,
)
from .schema import _is_pydantic_model, json_schema_of

if TYPE_CHECKING:
    from .attempts import OperationContext
    from .definition import Operation


def plain(value: Any, what: str) -> Any:
    """``value`` as JSON, or a TypeError naming ``what``."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} is not JSON serialisable: {error}") from None


class StepCall(str):
    """``ctx.step`` in an operation: the step's id (a string, as in every hook), and the
    call that journals a step of durable code:

    ``ctx.step(name, fn, *args, retries=0, retry_delay=1.0, backoff=2.0, **kwargs)`` calls
    ``fn(*args, **kwargs)`` once and journals its result (JSON); a replay of the code
    (a retry, a recovery, a resume after a wait) returns that result without calling
    ``fn``. A raise is tried again ``retries`` times, ``retry_delay * backoff ** n``
    seconds apart, then fails the attempt. In ``async def`` code, ``await`` it: ``fn``
    may be a coroutine function. ``ctx.step_id`` is the step's id alone.
    """

    _ctx: OperationContext

    def __new__(cls, step: str, ctx: OperationContext) -> StepCall:
        made = super().__new__(cls, step)
        made._ctx = ctx
        return made

    def __call__(self, name: str, fn: Callable[..., Any], /, *args: Any, retries: int = 0,
                 retry_delay: float = 1.0, backoff: float = 2.0, **kwargs: Any) -> Any:
        return self._ctx.run_step(name, fn, *args, retries=retries, retry_delay=retry_delay,
                                  backoff=backoff, **kwargs)

    def __reduce__(self) -> Any:  # a copy (copy.deepcopy, pickle) is the plain id
        return (str, (str(self),))


class Replay:
    """One attempt's walk through its operation's journal (shared by its children)."""

    def __init__(self, store: JournalStore | None, key: str | None, *,
                 woken: Mapping[str, Any] | None, durable: bool,
                 operation: Operation | None, empty: bool = False) -> None:
        self.store: JournalStore = store if store is not None else MemoryJournal()
        self.key = key or ""
        self.woken = dict(woken) if woken else None
        self.durable = durable
        self.operation = operation
        self.position = 0
        # ``empty``: the journal is known to hold nothing (a run's first attempt), so it
        # is not read: a step costs its one write.
        self._entries: dict[int, JournalEntry] | None = {} if empty else None

        self._thread: ThreadPoolExecutor | None = None

    def load(self) -> None:
        if self._entries is None:
            self._entries = {e.position: e for e in self.store.entries(self.key)}

    async def in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` off the event loop, in one thread of this attempt's: what the
        journal reads and writes there (a database connection) is closed with it."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="durable-code")
        return await asyncio.get_running_loop().run_in_executor(
            self._thread, partial(fn, *args))

    def close(self) -> None:
        """The attempt ended: its thread, if it had one, lets go of what it held (the
        store's ``release``: its database connections) and stops."""
        if self._thread is not None:
            release = getattr(self.store, "release", None)
            if release is not None:
                self._thread.submit(release).result()
            self._thread.shutdown()
            self._thread = None

    def held(self, name: str, kind: EntryKind) -> tuple[int, JournalEntry | None]:
        """The next position, and the entry the journal holds there (checked to be the
        same call: the same name and kind)."""
        self.load()
        assert self._entries is not None
        position, self.position = self.position, self.position + 1
        entry = self._entries.get(position)
        if entry is not None and (entry.name, entry.kind) != (name, kind):
            raise mismatch(position, name, kind, entry)
        return position, entry

    def patched(self, patch: str) -> bool:
        """``ctx.patched``: whether this run takes the code's new path (see there)."""
        self.load()
        assert self._entries is not None
        entry = self._entries.get(self.position)
        if entry is not None and (entry.kind, entry.name) != ("patch", patch):
            return False  # a run from before the change: it replays the old path
        if entry is None:
            self.record(JournalEntry(self.position, patch, "patch"))
        self.position += 1
        return True

    def record(self, entry: JournalEntry) -> JournalEntry:
        kept = self.store.record(self.key, entry)
        if (kept.name, kept.kind) != (entry.name, entry.kind):
            raise mismatch(entry.position, entry.name, entry.kind, kept)
        assert self._entries is not None
        self._entries[entry.position] = kept
        return kept

    def woken_at(self, position: int, name: str, kind: EntryKind) -> dict[str, Any] | None:
        """What ended the wait at ``position``, when it is the one that ended last."""
        woken = self.woken
        if woken is None or woken.get("position") != position:
            return None
        if (woken.get("name"), woken.get("kind")) != (name, kind):
            raise mismatch(position, name, kind, JournalEntry(
                position, str(woken.get("name")), woken.get("kind", "step")))
        return woken


# -- the calls, as OperationContext's methods make them ---------------------------------


def step(ctx: OperationContext, name: str, fn: Callable[..., Any], args: Sequence[Any],
         kwargs: Mapping[str, Any], retries: int, retry_delay: float, backoff: float) -> Any:
    """``ctx.step``: the journal's result, or ``fn``'s, recorded (retried as told)."""
    replay = ctx.replay
    position, entry = replay.held(name, "step")
    if entry is not None:
        return entry.value
    started, tries = ctx.now(), 0
    while True:
        ctx.check_cancelled()
        tries += 1
        try:
            value = plain(resolve(fn(*args, **kwargs)), f'The result of step "{name}"')
        except (Cancelled, Suspend):
            raise
        except Exception:
            if tries > retries:
                raise
            ctx.pause(retry_delay * backoff ** (tries - 1))
            continue
        return replay.record(JournalEntry(position, name, "step", value, tries, started,
                                          ctx.now())).value


async def astep(ctx: OperationContext, name: str, fn: Callable[..., Any], args: Sequence[Any],
                kwargs: Mapping[str, Any], retries: int, retry_delay: float, backoff: float
                ) -> Any:
    """``await ctx.step`` in ``async def`` code: a coroutine function is awaited on the
    loop; a plain function, and the journal, run in a thread."""
    replay = ctx.replay
    await replay.in_thread(replay.load)
    position, entry = replay.held(name, "step")
    if entry is not None:
        return entry.value
    started, tries = ctx.now(), 0
    while True:
        ctx.check_cancelled()
        tries += 1
        try:
            if asyncio.iscoroutinefunction(fn):
                value = await fn(*args, **kwargs)
            else:
                value = await replay.in_thread(partial(fn, *args, **kwargs))
                if asyncio.iscoroutine(value):
                    value = await value
            value = plain(value, f'The result of step "{name}"')
        except (Cancelled, Suspend):
            raise
        except Exception:
            if tries > retries:
                raise
            await asyncio.sleep(retry_delay * backoff ** (tries - 1))
            continue
        entry = JournalEntry(position, name, "step", value, tries, started, ctx.now())
        return (await replay.in_thread(replay.record, entry)).value


def wait(ctx: OperationContext, kind: EntryKind, name: str, suspension: Callable[[int], Suspension],
         result: Callable[[dict[str, Any]], Any]) -> Any:
    """A wait: its recorded value, what just ended it (recorded now), or the attempt ends
    (:class:`Suspend`) with what it waits for."""
    replay = ctx.replay
    if not replay.durable:
        what = replay.operation.id if replay.operation is not None else "this operation"
        raise WorkflowError(f'Only durable code waits without a worker: give operation '
                            f'"{what}" durable=True')
    position, entry = replay.held(name, kind)
    if entry is not None:
        return result(dict(entry.value or {}))
    woken = replay.woken_at(position, name, kind)
    if woken is not None:
        value = {"value": woken.get("value"), "timed_out": bool(woken.get("timed_out"))}
        now = ctx.now()
        replay.record(JournalEntry(position, name, kind, value, 1, woken.get("since"), now))
        return result(value)
    ctx.check_cancelled()
    raise Suspend(suspension(position))


def until_of(when: datetime | float | int, what: str) -> float:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise TypeError(f"{what} needs a datetime with a time zone")
        return when.timestamp()
    if isinstance(when, int | float) and not isinstance(when, bool):
        return float(when)
    raise TypeError(f"{what} takes a datetime or seconds since the epoch, not {when!r}")


def seconds_of(duration: float | int | timedelta, what: str) -> float:
    if isinstance(duration, timedelta):
        return duration.total_seconds()
    if isinstance(duration, int | float) and not isinstance(duration, bool):
        return float(duration)
    raise TypeError(f"{what} takes seconds or a timedelta, not {duration!r}")


def signal_value(name: str, on_timeout: str) -> Callable[[dict[str, Any]], Any]:
    def result(value: dict[str, Any]) -> Any:
        if value.get("timed_out"):
            if on_timeout == "continue":
                return None
            raise WaitTimedOut(f'The signal "{name}" did not come in time')
        return value.get("value")
    return result


def task_spec(ctx: OperationContext, task: Task) -> dict[str, Any]:
    """The task ``ctx.ask`` opens, as JSON for the engine (its hooks asked now)."""
    task.check(f'ctx.ask in operation "{ctx.replay.operation.id if ctx.replay.operation else ""}"')
    candidates = task.candidates(ctx) if callable(task.candidates) else task.candidates
    show = task.show(ctx) if callable(task.show) else task.show
    spec: dict[str, Any] = plain({
        "title": task.title or "", "form": json_schema_of(task.form),
        "candidates": list(candidates or ()), "exclude_owner": task.exclude_owner,
        "due": in_seconds(task.due), "escalate_to": list(task.escalate_to),
        "show": [list(pair) for pair in show] if show and not isinstance(show[0], str)
        else list(show or ()),
    }, "The task asked")
    return spec


def decision_of(task: Task) -> Callable[[dict[str, Any]], Any]:
    def result(value: dict[str, Any]) -> Any:
        decision = value.get("value")
        if _is_pydantic_model(task.form):
            return task.form.model_validate(decision)
        return decision
    return result
