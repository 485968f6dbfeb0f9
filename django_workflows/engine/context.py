"""What user code receives: the hook context, and how hooks are called."""

from __future__ import annotations

import asyncio
import copy
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .errors import Cancelled, MissingStateKey


def never_stopped() -> str | None:
    return None


class StateView(Mapping[str, Any]):
    """The state as user code reads it: read-only, and a missing key says it is the state's."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise MissingStateKey(key) from None

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"StateView({self._values!r})"


class HookContext:
    """Passed to every hook: ``enter``, ``leave``, ``validate``, ``when``, guards, branches.

    ``state`` is a read-only view of the instance's state as of the call.
    ``cancelled`` and ``check_cancelled()`` tell background work when to stop.
    """

    def __init__(self, *, state: Mapping[str, Any], instance_id: str, workflow: str,
                 step: str | None = None, user: Any = None,
                 stop_reason: Callable[[], str | None] = never_stopped) -> None:
        self.state: Mapping[str, Any] = StateView(copy.deepcopy(dict(state)))
        self.instance_id = instance_id
        self.workflow = workflow
        self.step = step
        self.user = user
        self._stop_reason = stop_reason

    @property
    def cancelled(self) -> bool:
        return self._stop_reason() is not None

    def check_cancelled(self) -> None:
        """Raise :class:`Cancelled` once the work was told to stop."""
        reason = self._stop_reason()
        if reason is not None:
            raise Cancelled(reason)

    @property
    def step_id(self) -> str | None:
        """The id of the step the hook runs for (``ctx.step`` is the same)."""
        return None if self.step is None else str(self.step)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.workflow} {self.instance_id} step={self.step_id}>"


def resolve(value: Any) -> Any:
    """The value of a hook's result; an awaitable is run to completion first."""
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # Called from inside an event loop: run the coroutine in a thread of its own.
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(wait())
        except BaseException as error:  # re-raised in the caller's thread
            box["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def call_directly(hook: Callable[..., Any], *args: Any) -> Any:
    """The default way to call a hook; the service wraps each call in a savepoint."""
    return resolve(hook(*args))
