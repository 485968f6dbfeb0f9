"""The services for async code: ``await services.anext(instance, user=request.user)``.

Every public function of the services has a twin named with an ``a`` before it, as Django
names ``QuerySet.aget``. A twin runs its sync function through asgiref's ``sync_to_async``
with ``thread_sensitive=True``: the row lock, the transaction and the after-commit hand-over
are the sync function's own, in the thread Django keeps for a request's database work.
Each twin takes what its function takes (a type checker sees the same parameters) and
answers an awaitable of what it returns. ``tests/services/test_async_twins.py`` holds them
equal to the public functions of ``django_workflows.services`` and prints the line a new
function needs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async

from .attempts import (
    beat,
    claim_attempt,
    finish_attempt,
    finish_claimed,
    fire_deadline,
    interrupt_attempt,
)
from .commands import (
    applies,
    applies_to_journal,
    applies_to_operations,
    command,
    create,
    delete,
    execute,
)
from .functions import (
    back,
    cancel,
    claim,
    complete,
    next,
    pause,
    release,
    resume,
    retry,
    rewind,
    rollback,
    skip,
    skip_operation,
    start,
    update_state,
    validate,
)
from .schedules import fire_due_schedules, pause_schedule, resume_schedule
from .signal_delivery import signal
from .sweep import sweep
from .sweep_items import retry_set_aside

P = ParamSpec("P")
R = TypeVar("R")


def async_twin(function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``function`` as a coroutine function taking the same arguments, run in the thread
    Django keeps for the database work of the current request (or async context)."""
    run = sync_to_async(function, thread_sensitive=True)

    @functools.wraps(function)  # its signature and hints: inspect and the docs see the sync ones
    async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
        return await run(*args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"a{function.__name__}"
    twin.__module__ = __name__
    twin.__doc__ = (f"The async twin of :func:`{function.__module__}.{function.__name__}`: "
                    f"the same call, awaited.\n\n{function.__doc__ or ''}")
    return twin


# The commands people give (functions.py, commands.py, signal_delivery.py).
acreate = async_twin(create)
astart = async_twin(start)
anext = async_twin(next)
aback = async_twin(back)
arewind = async_twin(rewind)
askip = async_twin(skip)
askip_operation = async_twin(skip_operation)
avalidate = async_twin(validate)
aretry = async_twin(retry)
apause = async_twin(pause)
aresume = async_twin(resume)
acancel = async_twin(cancel)
arollback = async_twin(rollback)
aupdate_state = async_twin(update_state)
aclaim = async_twin(claim)
arelease = async_twin(release)
acomplete = async_twin(complete)
acommand = async_twin(command)
aexecute = async_twin(execute)
adelete = async_twin(delete)
aapplies = async_twin(applies)
aapplies_to_operations = async_twin(applies_to_operations)
aapplies_to_journal = async_twin(applies_to_journal)
asignal = async_twin(signal)
# Schedules and the sweep's set-aside items (what the admin's buttons give).
apause_schedule = async_twin(pause_schedule)
aresume_schedule = async_twin(resume_schedule)
aretry_set_aside = async_twin(retry_set_aside)
# The runners' side: attempts, heartbeats, deadlines and the sweep.
aclaim_attempt = async_twin(claim_attempt)
afinish_attempt = async_twin(finish_attempt)
afinish_claimed = async_twin(finish_claimed)
ainterrupt_attempt = async_twin(interrupt_attempt)
abeat = async_twin(beat)
afire_deadline = async_twin(fire_deadline)
afire_due_schedules = async_twin(fire_due_schedules)
asweep = async_twin(sweep)

__all__ = [
    "aapplies",
    "aapplies_to_journal",
    "aapplies_to_operations",
    "aback",
    "abeat",
    "acancel",
    "aclaim",
    "aclaim_attempt",
    "acommand",
    "acomplete",
    "acreate",
    "adelete",
    "aexecute",
    "afinish_attempt",
    "afinish_claimed",
    "afire_deadline",
    "afire_due_schedules",
    "ainterrupt_attempt",
    "anext",
    "apause",
    "apause_schedule",
    "arelease",
    "aresume",
    "aresume_schedule",
    "aretry",
    "aretry_set_aside",
    "arewind",
    "arollback",
    "asignal",
    "askip",
    "askip_operation",
    "astart",
    "asweep",
    "aupdate_state",
    "avalidate",
]
