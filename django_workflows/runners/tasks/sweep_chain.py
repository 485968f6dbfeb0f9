"""How the sweep runs where the workers are a Tasks backend's: a chain of sweep Tasks, and a
sweeper thread beside every worker process that lives on.

Nothing but the backend's worker needs to run (``manage.py db_worker``, RQ's ``rqworker``),
and neither gives a hook at its start, so the sweep reaches the workers as a Task:

- **The chain.** A sweep Task (:data:`chain_run`) fires what is due and enqueues itself again
  with ``run_after`` for when the next thing falls due (at most ``GAP`` seconds later). It
  waits in the backend's own queue between turns, so it outlives any worker; it runs ahead
  of queued attempts (the highest priority where the backend has priorities, or a queue of
  its own: ``TASKS_SWEEP_QUEUE``). One chain is *the* chain: each run renews a lease row of
  its own (``CHAIN``) and a run that finds another chain's lease alive ends, so chains
  started twice do not pile up. A process that hands out work, runs it or serves a request
  starts a chain when the lease says none is alive (:func:`keep_sweeping`, a look at most
  every ``LOOK_EVERY`` seconds); so does ``migrate``. (A chain is lost only with the queue
  that holds it: a Redis restarted empty, a worker killed in the middle of a run.)
- **The thread.** A run of ours in a worker process that lives on (``db_worker``, our RQ
  worker class ``rq_worker.Worker``, which starts it with the worker, RQ's ``SimpleWorker``;
  not RQ's default worker, which forks a process per Task) starts the same
  sweeper thread as django-q2's workers run (``runners/sweeper_thread.py``). It sweeps beside the
  worker, so an operation that holds the only worker does not hold its own timeout up, and
  it fires deadlines within half a second. While one exists the chain only stands by
  (every ``STANDBY`` seconds), ready to sweep again if every thread is gone.

The chain and the threads take turns through the sweep's lease as every sweeper does
(``services/sweep.py``): the holder sweeps and records ``swept_at``, which the admin's
banner and check W030 read.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from ... import clock
from ...conf import workflow_settings
from ...models import SweepLease
from ...services.sweep import hold_lease, next_deadline_at, release_lease, sweep_turn
from ..sweeper_thread import LEASE_TTL, Sweeper
from .compat import TASK_MAX_PRIORITY, Task, TaskContext, task_backends, task_of

logger = logging.getLogger("django_workflows")

CHAIN = "tasks-sweep"  # the lease row that says which chain of sweep Tasks is alive
GAP = 1.0  # a chain that sweeps runs again at least this often
STANDBY = 5.0  # a chain whose turn a sweeper thread takes runs again this often
SLACK = 10.0  # a chain this late for its next run is taken for lost
LOOK_EVERY = 5.0  # a process looks whether a chain is alive at most this often
NOW = 0.05  # a run due sooner than this is enqueued without run_after


# -- the Tasks ----------------------------------------------------------------------------


def _backend() -> Any:
    return task_backends[workflow_settings.TASKS_BACKEND]


def sweep_task() -> Task[..., Any]:
    """The sweep Task on the configured backend and queue, ahead of queued work."""
    task = chain_run
    backend = _backend()
    queue = workflow_settings.TASKS_SWEEP_QUEUE or workflow_settings.TASKS_QUEUE
    priority = TASK_MAX_PRIORITY if backend.supports_priority else task.priority
    return task_for(task, workflow_settings.TASKS_BACKEND, queue, priority)


_using_cache: dict[tuple[Any, ...], Task[..., Any]] = {}


def task_for(task: Task[..., Any], backend: str, queue: str, priority: int
             ) -> Task[..., Any]:
    """``task.using(...)``, made once: each one is checked against its backend again."""
    key = (task.module_path, backend, queue, priority)
    found = _using_cache.get(key)
    if found is None:
        found = _using_cache[key] = task.using(backend=backend, queue_name=queue,
                                               priority=priority)
    return found


def start_chain() -> None:
    """Enqueue the first run of a new chain (it ends at once if another chain is alive)."""
    if not _backend().supports_defer:
        logger.warning("Tasks backend %r cannot defer Tasks (run_after): no sweep runs as a "
                       "Task; run `manage.py workflows_sweep --loop`",
                       workflow_settings.TASKS_BACKEND)
        return
    sweep_task().enqueue(chain=uuid.uuid4().hex)


_next_look = 0.0  # time.monotonic() of this process's next look at the chain's lease
_look_lock = threading.Lock()


def keep_sweeping() -> None:
    """Start a chain if none is alive; looks at most every ``LOOK_EVERY`` seconds.

    Not in a process forked for one Task (RQ's work horse): there every look would be the
    first, on every Task, and it costs a cold process a third of a no-op operation. The
    processes that serve requests and hand out work look, and the chain runs there too.
    """
    global _next_look
    if _forked:
        return
    mono = time.monotonic()
    with _look_lock:
        if mono < _next_look:
            return
        _next_look = mono + LOOK_EVERY
    until = SweepLease.objects.filter(name=CHAIN).values_list("held_until", flat=True).first()
    if until is None or until < clock.now_datetime():
        start_chain()


# -- a run of the chain -------------------------------------------------------------------


def run_chain(chain: str, *, whole_at: float, previous: str | None, own: str | None) -> None:
    """One run of chain ``chain``: sweep (or stand by for a thread), then enqueue the next.

    ``whole_at``: when (``clock.now()``) the whole sweep is due again (silent workers, lost
    attempts, kept signals); ``previous``: the result id of the run before, whose row the
    database backend would otherwise keep; ``own``: this run's.
    """
    now = clock.now_datetime()
    forget(previous)
    if not hold_chain(chain, now):
        logger.debug("Sweep chain %s ends: another chain is alive", chain)
        return
    next_at = clock.now() + STANDBY
    try:
        if sweeper_beside() is not None:  # the thread sweeps; this chain stands by
            release_lease(_holder(chain))
        elif hold_lease(_holder(chain), now, LEASE_TTL):
            next_at, whole_at = turn(now, whole_at)
    finally:
        run_after = clock.to_datetime(next_at) if next_at - clock.now() > NOW else None
        task = sweep_task()
        if run_after is not None:
            task = task.using(run_after=run_after)
        task.enqueue(chain=chain, whole_at=whole_at, previous=own)


def turn(now: datetime, whole_at: float) -> tuple[float, float]:
    """Fire what is due (and sweep whole when ``whole_at`` has come); when to run next, and
    when the next whole sweep is due. The turn of ``runners/sweeper_thread.py``, one at a time."""
    whole = clock.now() >= whole_at
    report = sweep_turn(now, whole=whole)
    if whole:
        whole_at = clock.now() + float(workflow_settings.SWEEP_INTERVAL)
    if report:
        logger.info("Sweep: %s", report)
    next_at = min(clock.now() + GAP, whole_at)
    next_due = next_deadline_at()
    if next_due is not None:
        next_at = min(next_at, next_due.timestamp())
    return next_at, whole_at


def _holder(chain: str) -> str:
    return f"tasks:{chain}"


def hold_chain(chain: str, now: datetime) -> bool:
    """Take or renew the chain's lease for ``chain``; False while another chain's is alive.

    One ``UPDATE``; the row is made when it is missing.
    """
    until = now + timedelta(seconds=max(GAP, STANDBY) + SLACK)
    free = Q(holder=chain) | Q(held_until__isnull=True) | Q(held_until__lt=now)

    def take() -> bool:
        return bool(SweepLease.objects.filter(free, name=CHAIN).update(
            holder=chain, held_until=until))

    if take():
        return True
    if SweepLease.objects.filter(name=CHAIN).exists():
        return False
    SweepLease.objects.bulk_create([SweepLease(name=CHAIN)], ignore_conflicts=True)
    return take()


def forget(result_id: str | None) -> None:
    """Delete the row the database backend keeps of a finished run of the chain.

    One run a second would otherwise add 86,400 rows a day to its table. RQ forgets
    results by itself (``result_ttl``); other backends keep what they keep.
    """
    if not result_id:
        return
    try:
        from django_tasks_db.backend import DatabaseBackend
        from django_tasks_db.models import DBTaskResult
    except ImportError:
        return
    if isinstance(_backend(), DatabaseBackend):
        DBTaskResult.objects.filter(pk=result_id, status="SUCCESSFUL").delete()


# -- the thread beside a worker -----------------------------------------------------------

_sweeper: Sweeper | None = None
_sweeper_lock = threading.Lock()
_forked = False  # this process was forked after this module was imported


def _after_fork() -> None:
    global _forked, _sweeper, _sweeper_lock
    _forked, _sweeper, _sweeper_lock = True, None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def sweeper_beside() -> Sweeper | None:
    """This worker process's sweeper thread, started on first use; None in a process forked
    for one Task (RQ's work horse: the thread would die with it) or with
    ``SWEEP_IN_WORKERS`` off."""
    global _sweeper
    if _forked or not workflow_settings.SWEEP_IN_WORKERS:
        return None
    with _sweeper_lock:
        if _sweeper is None:
            _sweeper = Sweeper()
            _sweeper.start()
            # A worker that exits (db_worker on SIGTERM) hands the lease on at once.
            atexit.register(_sweeper.stop)
        return _sweeper


# -- the Task -----------------------------------------------------------------------------


@task_of(workflow_settings.TASKS_BACKEND, workflow_settings.TASKS_QUEUE, takes_context=True)
def chain_run(context: TaskContext[..., Any], chain: str, whole_at: float = 0.0,
              previous: str | None = None) -> None:
    """One run of the sweep's chain of Tasks."""
    try:
        run_chain(chain, whole_at=whole_at, previous=previous, own=context.task_result.id)
    except Exception:
        logger.exception("The sweep Task failed; another starts when work is handed out")
