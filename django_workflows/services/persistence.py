"""Rows and snapshots: load a locked chain into the engine, save what changed."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from .. import engine, registry
from ..clock import to_datetime
from ..conf import workflow_settings
from ..exceptions import StateTooLarge, UnknownWorkflow
from ..models import (
    NEVER_DUE,
    Attempt,
    AttemptStatus,
    Deadline,
    SignalStatus,
    TaskCandidate,
    WorkflowInstance,
    WorkflowSignal,
    WorkflowTask,
)
from .journal import truncate
from .slots import UNCLAIMED, hand_out_resumed, hand_out_waiting, take_slots
from .sql import EventRow, Statement, statements

# Engine fields kept in their own columns rather than in ``snapshot``.
COLUMNS = ("id", "workflow", "version", "status", "state", "current_step", "parent_id",
           "parent_step", "started_at", "completed_at", "nested")


def definition_of(workflow_id: str) -> engine.Workflow:
    definition = registry.find(workflow_id)
    if definition is None:
        raise UnknownWorkflow(f'No workflow "{workflow_id}" is registered')
    return definition


def load_chain(rows: list[WorkflowInstance]) -> tuple[engine.Workflow, engine.WorkflowSnapshot]:
    """The root's definition and the tree of snapshots (each migrated if need be)."""
    snapshots = [engine.load(definition_of(row.workflow), row.engine_data(), nested=index > 0)
                 for index, row in enumerate(rows)]
    tree = snapshots[-1]
    for snapshot in reversed(snapshots[:-1]):
        tree = snapshot.changed(nested=tree)
    return definition_of(rows[0].workflow), tree


def _apply_to_row(row: WorkflowInstance, node: engine.WorkflowSnapshot) -> list[str]:
    """Copy a snapshot onto its row; the names of the columns that changed."""
    data = engine.to_json(node)
    rest = {key: value for key, value in data.items() if key not in COLUMNS}
    if node.nested is not None:
        rest["nested_id"] = node.nested.id
    waiting = node.waiting
    awaits = waiting is not None and waiting.kind == "signal" and waiting.arrived is None
    values = {
        "version": node.version, "status": node.status, "state": data["state"],
        "current_step": node.current_step or "", "snapshot": rest,
        "started_at": to_datetime(node.started_at),
        "completed_at": to_datetime(node.completed_at),
        # A signal by correlation finds the instances waiting for it by these columns.
        "awaiting": waiting.name if awaits and waiting is not None else None,
        "correlation": waiting.correlation if awaits and waiting is not None else None,
    }
    changed = []
    for name, value in values.items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed.append(name)
    return changed


def check_state_size(state: Any) -> None:
    limit = workflow_settings.MAX_STATE_BYTES
    try:
        # Bytes of compact UTF-8 JSON: what a person sending it would count.
        size = len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode())
    except (TypeError, ValueError):
        return  # not JSON: the engine refuses it as an invalid state, naming the problem
    if size > limit:
        raise StateTooLarge(size, limit)


@dataclass
class Saved:
    rows: dict[str, WorkflowInstance]
    events: list[EventRow] = field(default_factory=list)
    dispatch: list[str] = field(default_factory=list)  # attempt tokens to hand to the runner
    signals: dict[Any, WorkflowSignal] = field(default_factory=dict)  # as the command left them
    attempts_made: tuple[str, ...] = ()  # the tokens of the attempt rows it inserted
    deadlines_made: tuple[tuple[str, str], ...] = ()  # (token, kind) of its deadline rows


def save_outcome(chain: list[WorkflowInstance], before: engine.WorkflowSnapshot,
                 outcome: engine.Outcome, *, actor: Any = None,
                 also: Sequence[Statement] = ()) -> Saved:
    """Write the changed instances (revision + 1), their events, and the effects' rows;
    ``also``: other rows' statements, sent with the instances' own."""
    saved, changed = _saved_rows(chain, before, outcome, actor)
    statements().write(changed, saved.events, also)
    saved.dispatch, saved.attempts_made, saved.deadlines_made = _store_effects(outcome.effects)
    _store_tasks(saved.rows, outcome.effects)
    for effect in outcome.effects:  # a retry from a step: the code runs them again
        if isinstance(effect, engine.TruncateJournal):
            truncate(effect.instance_id, effect.journal, effect.position)
    saved.signals = _store_signals_taken(saved.rows, outcome.effects)
    paused = {node.id for node in before.tree() if node.status == "paused"}
    resumed = [node.id for node in outcome.snapshot.tree()
               if node.id in paused and node.status != "paused"]
    if resumed:  # their attempts that wait for a slot may take one now
        transaction.on_commit(partial(hand_out_resumed, resumed))
    return saved


def save_if_unchanged(row: WorkflowInstance, before: engine.WorkflowSnapshot,
                      outcome: engine.Outcome, *, actor: Any = None,
                      also: Sequence[Statement] = ()) -> Saved | None:
    """:func:`save_outcome` of an instance read at ``row.revision`` without its lock:
    written only if it is still there and no one holds its lock
    (:meth:`~.sql.postgresql.PostgreSQL.write_if_unchanged`); None when nothing was.

    Only for an outcome that writes nothing but the instance, its events and ``also``
    (:func:`writes_only_the_instance`). ``row`` takes the new values whether or not they
    were written: read the instance again after a None.
    """
    assert writes_only_the_instance(outcome)
    revision = row.revision
    saved, changed = _saved_rows([row], before, outcome, actor)
    (_, names), = changed
    if not statements().write_if_unchanged(row, names, revision, saved.events, also):
        return None
    return saved


def _saved_rows(chain: list[WorkflowInstance], before: engine.WorkflowSnapshot,
                outcome: engine.Outcome, actor: Any
                ) -> tuple[Saved, list[tuple[WorkflowInstance, list[str]]]]:
    """The rows as ``outcome`` leaves them (a new child saved), with the event rows, and
    each changed instance with the names of its changed columns, to be written."""
    rows = {str(row.pk): row for row in chain}
    old_states = {node.id: node.state for node in before.tree()}
    events_by_instance: dict[str, list[engine.Event]] = defaultdict(list)
    for event in outcome.events:
        events_by_instance[event.instance_id].append(event)
    now = timezone.now()
    # An event stamped before the command (a claim recorded now) keeps its own time.
    latest = max((event.at for event in outcome.events), default=0.0)
    changed_ids = {n.id for n in engine.changed_nodes(before, outcome.snapshot,
                                                      outcome.detached)}
    event_rows: dict[int, EventRow] = {}
    changed: list[tuple[WorkflowInstance, list[str]]] = []
    nodes = [*outcome.snapshot.tree(),
             *(node for child in outcome.detached for node in child.tree())]
    for node in nodes:
        if node.id in changed_ids or node.id in events_by_instance:
            if node.state is not old_states.get(node.id):
                check_state_size(node.state)
            node_events = events_by_instance.pop(node.id, [])
            for event, event_row in zip(node_events, _save_node(rows, node, node_events, now,
                                                                latest, actor, changed),
                                        strict=True):
                event_rows[id(event)] = event_row
    # In the order the engine emitted them across the tree (a child's cancel first).
    return Saved(rows=rows, events=[event_rows[id(e)] for e in outcome.events
                                    if id(e) in event_rows]), changed


def writes_only_the_instance(outcome: engine.Outcome) -> bool:
    """Whether saving ``outcome`` writes the root instance and its events and nothing else:
    no attempt, deadline or task row, no nested child started or let go."""
    return outcome.snapshot.nested is None and not outcome.detached and all(
        isinstance(effect, engine.SetDeadline) and effect.kind == "attempt-timeout"
        for effect in outcome.effects)  # the attempt's row holds that one: nothing to write


def _save_node(rows: dict[str, WorkflowInstance], node: engine.WorkflowSnapshot,
               events: list[engine.Event], now: datetime, latest: float, actor: Any,
               changed: list[tuple[WorkflowInstance, list[str]]]) -> list[EventRow]:
    """The node's row, inserted (a new child) or added to ``changed`` with the names of its
    changed columns; its events."""
    row = rows.get(node.id)
    if row is None:  # a nested child started by this command
        parent = rows.get(node.parent_id or "")
        # The child belongs to whoever owns its parent, so the owner can see and drive it.
        row = WorkflowInstance(id=UUID(node.id), workflow=node.workflow, version=node.version,
                               parent_id=UUID(node.parent_id) if node.parent_id else None,
                               parent_step=node.parent_step or "",
                               owner_id=parent.owner_id if parent is not None else None,
                               created_at=now)
        _apply_to_row(row, node)
        row.revision, row.updated_at, row.last_event = 1, now, len(events)
        row.save(force_insert=True)
        rows[node.id] = row
        first = 1
    else:
        names = _apply_to_row(row, node)
        row.revision += 1
        first = row.last_event + 1
        row.last_event += len(events)
        row.updated_at = now
        changed.append((row, [*names, "revision", "last_event", "updated_at"]))
    actor_id = getattr(actor, "pk", None)
    return [
        EventRow(row, sequence=first + index, type=event.type, step=event.step or "",
                 actor_id=actor_id, revision=row.revision, error=event.error,
                 data=dict(event.data),
                 created_at=now - timedelta(seconds=latest - event.at)
                 if event.at < latest else now)
        for index, event in enumerate(events)
    ]


def _store_effects(effects: tuple[engine.Effect, ...]
                   ) -> tuple[list[str], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Attempt and deadline rows for the effects; the tokens to dispatch after commit, and
    the attempt and deadline rows made (their keys)."""
    attempts: dict[str, Attempt] = {}
    stops: dict[str, str] = {}
    deadlines: dict[tuple[str, str], Deadline] = {}
    cleared: set[str] = set()
    for effect in effects:
        if isinstance(effect, engine.RunAttempt):
            slot = effect.slot or engine.Slot()
            attempts[effect.token] = Attempt(
                token=effect.token, instance_id=effect.instance_id, kind=effect.kind,
                target=effect.target, number=effect.attempt, timeout=effect.timeout,
                limit_key=slot.limit_key, limit_max=slot.max or None,
                rate_key=slot.rate_key, rate_limit=slot.rate_limit or None,
                rate_per=slot.per or None)
        elif isinstance(effect, engine.StopAttempt):
            stops[effect.token] = effect.reason
        elif isinstance(effect, engine.SetDeadline) and effect.kind == "attempt-timeout":
            # The attempt's own row holds it: its claim set it already, to the same time.
            cleared.discard(effect.token)
        elif isinstance(effect, engine.SetDeadline):
            deadlines[(effect.token, effect.kind)] = Deadline(
                instance_id=effect.instance_id, kind=effect.kind, token=effect.token,
                due_at=to_datetime(effect.at))
        elif isinstance(effect, engine.ClearDeadline):
            cleared.add(effect.token)
            deadlines = {key: d for key, d in deadlines.items() if key[0] != effect.token}
    for token, reason in stops.items():
        if token in attempts:  # stopped in the command that queued it: it never runs
            attempts[token].status, attempts[token].stop_reason = AttemptStatus.DROPPED, reason
    if cleared:
        Deadline.objects.filter(token__in=cleared).delete()
        Attempt.objects.filter(token__in=cleared, timeout_at__isnull=False).update(
            timeout_at=None)
    if deadlines:
        Deadline.objects.bulk_create(deadlines.values())
    if attempts:
        take_slots(list(attempts.values()))  # a limited one waits while its key is full
        Attempt.objects.bulk_create(attempts.values())
    by_reason: dict[str, list[str]] = defaultdict(list)
    for token, reason in stops.items():
        if token not in attempts:
            by_reason[reason].append(token)
    if by_reason:
        # A limited one stopped before it ran frees its slot (or its place in the line).
        freed = set(Attempt.objects.filter(
            token__in=[t for tokens in by_reason.values() for t in tokens],
            status__in=UNCLAIMED).exclude(limit_key="", rate_key="")
            .values_list("limit_key", "rate_key"))
        if freed:
            keys = {key for pair in freed for key in pair}
            transaction.on_commit(partial(hand_out_waiting, keys))
    for reason, tokens in by_reason.items():
        # One that no worker claimed yet never will run: the claim would be refused.
        Attempt.objects.filter(token__in=tokens).update(stop_reason=reason, status=Case(
            When(status__in=UNCLAIMED, then=Value(AttemptStatus.DROPPED.value)),
            default=F("status")))
    return ([t for t, a in attempts.items() if a.status == AttemptStatus.QUEUED],
            tuple(attempts), tuple(deadlines))


def _store_signals_taken(rows: dict[str, WorkflowInstance], effects: tuple[engine.Effect, ...]
                         ) -> dict[Any, WorkflowSignal]:
    """Each signal's row as the command left it for its instance (``TakeSignal``): taken
    (the instance joins ``taken_by``; a signal still being handed over to instances that
    were busy stays kept for them), refused (with why), held by a paused instance, or kept
    again. Its row is locked already: the signal's delivery or the step's look locked it.
    The rows, by their key."""
    settled: dict[Any, WorkflowSignal] = {}
    for effect in effects:
        if not isinstance(effect, engine.TakeSignal):
            continue
        row = WorkflowSignal.objects.filter(pk=effect.signal_id).first()
        if row is None:
            continue
        settled[row.pk] = row
        taker, handing_over = effect.instance_id, row.status == SignalStatus.KEPT
        others = [pk for pk in row.taken_by if pk != taker]
        if effect.fate == "refused":
            row.status, row.detail = SignalStatus.REFUSED, (effect.reason or "")[:2000]
        elif effect.fate == "kept":
            row.status, row.taken_by = SignalStatus.KEPT, others
        elif effect.fate == "held":
            row.status, row.taken_by = SignalStatus.HELD, [*others, taker]
        else:
            row.status = SignalStatus.KEPT if handing_over and others else SignalStatus.TAKEN
            row.taken_by = [*others, taker]
            instance = rows.get(taker)
            row.taken_at = instance.updated_at if instance is not None else timezone.now()
        row.save(update_fields=["status", "detail", "taken_by", "taken_at"])
    return settled


def _store_tasks(rows: dict[str, WorkflowInstance], effects: tuple[engine.Effect, ...]) -> None:
    """Each task as the command left it: its row, and the candidate rows of an open one."""
    saved: dict[str, tuple[engine.SaveTask, bool, bool]] = {}  # id -> last, opened, new keys
    for effect in effects:
        if isinstance(effect, engine.SaveTask):
            _, opened, changed = saved.get(effect.task.id, (effect, False, False))
            saved[effect.task.id] = (effect, opened or effect.opened,
                                     changed or effect.candidates_changed)
    if not saved:
        return
    user_pk = get_user_model()._meta.pk
    forget, candidates = [], []
    for effect, opened, candidates_changed in saved.values():
        task, instance = effect.task, rows[effect.instance_id]
        row = WorkflowTask(
            id=UUID(task.id), instance_id=instance.pk, workflow=instance.workflow,
            step=task.step, title=task.title[:200], status=task.status,
            candidates=list(task.candidates),
            excluded_user_id=instance.owner_id if task.exclude_owner else None,
            claimed_by_id=user_pk.to_python(task.claimed_by) if task.claimed_by else None,
            completed_by_id=user_pk.to_python(task.completed_by) if task.completed_by else None,
            input=task.input, due_at=to_datetime(task.due_at), overdue=task.overdue,
            created_at=to_datetime(task.opened_at) or timezone.now(),
            completed_at=to_datetime(task.completed_at), rank=0 if task.overdue else 1,
            due_sort=to_datetime(task.due_at) or NEVER_DUE,
            asked=dict(task.asked) if task.asked is not None else None)
        row.save(force_insert=opened, force_update=not opened)
        if not opened and (candidates_changed or not task.is_open):
            forget.append(row.pk)
        if task.is_open and (opened or candidates_changed):
            candidates += [TaskCandidate(task_id=row.pk, key=key)
                           for key in dict.fromkeys(task.candidates)]
    if forget:
        TaskCandidate.objects.filter(task_id__in=forget).delete()
    TaskCandidate.objects.bulk_create(candidates)
