"""Schedules: a workflow started on a calendar (``cron=``) or at a steady pace (``every=``).

    Schedule("monthly-billing", workflow="billing-run", cron="0 3 1 * *",
             timezone="Europe/Berlin", overlap="skip", catch_up="latest")
    Schedule("heartbeat", workflow="ping", every=timedelta(minutes=5))

The due times are reckoned here, in pure Python; the service layer
(``services/schedules.py``) keeps a row per schedule and makes one instance per due
time. Cron expressions (five fields) are read by cronsim, the ``cron`` extra, in the
schedule's time zone as Debian's cron reads them: a time that a change to summer time
skips runs at the first minute after it, a time that the change back repeats runs once.
``every=`` counts whole seconds from the Unix epoch, so its due times are the same
whoever reckons them and whenever (a restart does not move them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .definition import Seconds, Workflow
from .errors import DefinitionError

try:  # the cron extra; every= schedules work without it (a cron one is check E053)
    from cronsim import CronSim, CronSimError
except ImportError:  # pragma: no cover - the base test run has it too
    CronSim = None  # type: ignore[assignment,misc]  # no cron extra: check E053 says so
    CronSimError = ValueError  # type: ignore[assignment,misc]  # what nothing raises then

Overlap = Literal["allow", "skip"]
CatchUp = Literal["none", "latest", "all"]
OVERLAPS = ("allow", "skip")
CATCH_UPS = ("none", "latest", "all")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # every= due times are whole multiples from here
CRON_ALIASES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
                "@hourly": "0 * * * *"}
# A run's reference is "<id>@<ISO time>" (25 characters) in a column of 200.
MAX_ID_LENGTH = 170
# catch_up="all" runs at most this many of the latest missed due times (older ones are
# dropped) ...
CATCH_UP_LIMIT = 1000
# ... and at most this many in one sweep: a long outage is worked off over a few turns.
CATCH_UP_BATCH = 100
ONE_SECOND = timedelta(seconds=1)


def cron_library_installed() -> bool:
    return CronSim is not None


@dataclass(frozen=True)
class Plan:
    """What a sweep does with a schedule's due times: ``run`` these (oldest first), then
    look again at ``next_due``; ``dropped``: due times missed that are not run
    (``catch_up`` said so)."""

    run: tuple[datetime, ...]
    next_due: datetime | None
    dropped: bool = False


@dataclass(frozen=True, eq=False)
class Schedule:
    """Start an instance of ``workflow`` at each due time.

    ``cron``: five fields (minute hour day month weekday) or an alias (``@daily``), read
    in ``timezone``; or ``every``: seconds (or a timedelta), whole and at least one.
    ``state``: the new instance's state, or a callable given the due time (an aware
    datetime in ``timezone``) returning it; None: the workflow's initial state.
    ``start``: start the instance (True) or leave it idle. ``overlap="skip"``: a due time
    that comes while the last run is unfinished is skipped (counted on the schedule's
    row). ``catch_up``: the due times the sweep missed (no worker ran): ``"none"`` runs
    only one that is at most a few sweep intervals late, ``"latest"`` the last one,
    ``"all"`` every one (the latest ``CATCH_UP_LIMIT``), oldest first.
    """

    id: str
    workflow: str | Workflow = field(kw_only=True)
    cron: str | None = field(default=None, kw_only=True)
    every: Seconds | None = field(default=None, kw_only=True)
    timezone: str = field(default="UTC", kw_only=True)
    state: Mapping[str, Any] | Callable[[datetime], Mapping[str, Any]] | None = field(
        default=None, kw_only=True)
    start: bool = field(default=True, kw_only=True)
    overlap: Overlap = field(default="allow", kw_only=True)
    catch_up: CatchUp = field(default="none", kw_only=True)
    zone: tzinfo = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id or "@" in self.id \
                or len(self.id) > MAX_ID_LENGTH:
            raise DefinitionError(f"Schedule id must be a non-empty string of at most "
                                  f"{MAX_ID_LENGTH} characters without '@', not {self.id!r}")
        what = f'Schedule "{self.id}"'
        set_ = object.__setattr__
        if isinstance(self.workflow, Workflow):
            set_(self, "workflow", self.workflow.id)
        if not isinstance(self.workflow, str) or not self.workflow:
            raise DefinitionError(f"{what}: workflow must be a workflow id or a Workflow, not "
                                  f"{self.workflow!r}")
        if (self.cron is None) == (self.every is None):
            raise DefinitionError(f"{what} needs cron (an expression) or every (seconds or a "
                                  "timedelta), and only one of them")
        if self.every is not None:
            set_(self, "every", _whole_seconds(self.every, f"{what}: every"))
        if self.cron is not None:
            if not isinstance(self.cron, str):
                raise DefinitionError(f"{what}: cron must be a string, not {self.cron!r}")
            set_(self, "cron", " ".join(CRON_ALIASES.get(self.cron.strip().lower(),
                                                         self.cron).split()))
            self._check_cron(what)
        set_(self, "zone", _zone(self.timezone, what))
        if self.state is not None and not callable(self.state) and not isinstance(
                self.state, Mapping):
            raise DefinitionError(f"{what}: state must be a dict or a callable given the due "
                                  f"time, not {self.state!r}")
        if not isinstance(self.start, bool):
            raise DefinitionError(f"{what}: start must be True or False, not {self.start!r}")
        if self.overlap not in OVERLAPS:
            raise DefinitionError(f'{what}: overlap must be "allow" or "skip", not '
                                  f"{self.overlap!r}")
        if self.catch_up not in CATCH_UPS:
            raise DefinitionError(f'{what}: catch_up must be "none", "latest" or "all", not '
                                  f"{self.catch_up!r}")

    def _check_cron(self, what: str) -> None:
        assert self.cron is not None
        if len(self.cron.split()) != 5:
            raise DefinitionError(f'{what}: cron "{self.cron}" must have five fields (minute '
                                  "hour day month weekday) or be an alias such as @daily",
                                  "bad_cron")
        if CronSim is None:
            return  # reported by the system checks (E053), not at import
        try:
            CronSim(self.cron, EPOCH)
        except CronSimError as error:
            raise DefinitionError(f'{what}: cron "{self.cron}" is not a cron expression: '
                                  f"{error}", "bad_cron") from None

    def __repr__(self) -> str:
        return f"<Schedule {self.id!r} {self.describe()}>"

    @property
    def workflow_id(self) -> str:
        """The workflow's id (``workflow`` may be given as the Workflow itself)."""
        return self.workflow.id if isinstance(self.workflow, Workflow) else self.workflow

    @property
    def every_seconds(self) -> int | None:
        """``every`` as whole seconds (``__post_init__`` made it so)."""
        return (int(self.every)  # type: ignore[arg-type]  # whole seconds since __post_init__
                if self.every is not None else None)

    def describe(self) -> str:
        """``cron 0 3 1 * * (Europe/Berlin)`` or ``every 300 s``."""
        if self.cron is not None:
            return f"cron {self.cron} ({self.timezone})"
        return f"every {self.every_seconds} s"

    # -- due times --------------------------------------------------------------------

    def due_times(self, after: datetime) -> Iterator[datetime]:
        """Every due time strictly after ``after`` (an aware datetime), in order, as aware
        UTC datetimes."""
        after = _aware(after)
        step = self.every_seconds
        if step is not None:
            count = (after - EPOCH) // timedelta(seconds=step) + 1
            while True:
                yield EPOCH + timedelta(seconds=step * count)
                count += 1
        if CronSim is None:
            raise RuntimeError(f'Schedule "{self.id}" needs the cron extra: pip install '
                               '"django-durable-workflows[cron]"')
        last = after
        # cronsim ends (StopIteration) when nothing is due within 50 years.
        for found in CronSim(self.cron or "", after.astimezone(self.zone)):
            due = found.astimezone(UTC)
            if due > last:  # the repeated hour of a change back can step back
                last = due
                yield due

    def next_due(self, after: datetime) -> datetime | None:
        """The first due time strictly after ``after`` (None: none within 50 years)."""
        return next(self.due_times(after), None)

    def is_due_time(self, moment: datetime) -> bool:
        """Whether ``moment`` is one of the due times (a row's next due time still is,
        unless the schedule's definition changed)."""
        return self.next_due(moment - timedelta(microseconds=1)) == moment

    def latest_due(self, since: datetime, until: datetime, count: int) -> list[datetime]:
        """The last ``count`` due times from ``since`` to ``until`` (both included), oldest
        first."""
        since, until = _aware(since), _aware(until)
        start = since - timedelta(microseconds=1)
        step = self.every_seconds
        if step is not None:
            last = (until - EPOCH) // timedelta(seconds=step)
            start = max(start, EPOCH + timedelta(seconds=step * (last - count)))
        elif CronSim is not None and count > 0:
            # Walk back from ``until`` to about the count-th latest, then forward from there:
            # the forward walk decides (a time a change of clocks skips, or repeats, is
            # where the two directions of cron may disagree).
            back = CronSim(self.cron or "", (until.replace(microsecond=0) + ONE_SECOND)
                           .astimezone(self.zone), reverse=True)
            for seen, found in enumerate(back, start=1):
                due = found.astimezone(UTC)
                if due < since:
                    break
                if seen > count:
                    start = max(start, due - ONE_SECOND)
                    break
        found_times: list[datetime] = []
        for due in self.due_times(start):
            if due > until:
                break
            found_times.append(due)
        return found_times[-count:] if count > 0 else []

    def plan(self, pending: datetime, now: datetime, *, grace: timedelta) -> Plan:
        """What a sweep at ``now`` does with the due times from ``pending`` on (the first one
        not yet run), by ``catch_up``. ``grace``: how late a due time may be and still run
        under ``catch_up="none"``."""
        if self.catch_up == "all":
            missed = self.latest_due(pending, now, CATCH_UP_LIMIT)
            run = tuple(missed[:CATCH_UP_BATCH])
            dropped = bool(missed) and missed[0] != pending
            if len(missed) > CATCH_UP_BATCH:
                return Plan(run, missed[CATCH_UP_BATCH], dropped)
            return Plan(run, self.next_due(now), dropped)
        latest = self.latest_due(pending, now, 1)
        if self.catch_up == "none" and latest and latest[0] < now - grace:
            return Plan((), self.next_due(now), True)
        return Plan(tuple(latest), self.next_due(now),
                    bool(latest) and latest[0] != pending)

    # -- a run --------------------------------------------------------------------------

    def reference(self, due: datetime) -> str:
        """The reference of the run of ``due``: ``"<id>@<ISO time in UTC>"``; one instance
        of the workflow per reference, so one run per due time."""
        return f"{self.id}@{_aware(due).astimezone(UTC).isoformat()}"

    def state_at(self, due: datetime) -> dict[str, Any] | None:
        """The state of the run of ``due`` (None: the workflow's initial state)."""
        if self.state is None:
            return None
        if callable(self.state):
            return dict(self.state(_aware(due).astimezone(self.zone)))
        return copy.deepcopy(dict(self.state))


def due_of(reference: str) -> datetime | None:
    """The due time a run's reference names (None: not a schedule's reference)."""
    _, at, when = reference.rpartition("@")
    if not at:
        return None
    try:
        return _aware(datetime.fromisoformat(when))
    except ValueError:
        return None


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"A schedule's time must be timezone-aware, not {moment!r}")
    return moment.astimezone(UTC)


def _whole_seconds(value: Any, what: str) -> int:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise DefinitionError(f"{what} must be a number of seconds or a timedelta, not "
                              f"{value!r}")
    if seconds < 1 or seconds != int(seconds):
        raise DefinitionError(f"{what} must be a whole number of seconds, at least 1, not "
                              f"{value!r}")
    return int(seconds)


def _zone(name: Any, what: str) -> tzinfo:
    if not isinstance(name, str) or not name:
        raise DefinitionError(f"{what}: timezone must be a time zone's name such as "
                              f'"Europe/Berlin", not {name!r}', "unknown_timezone")
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise DefinitionError(f'{what}: timezone "{name}" is not a time zone this system '
                              "knows (an IANA name such as \"Europe/Berlin\"; on a system "
                              'without time zone data, pip install tzdata)',
                              "unknown_timezone") from None
