"""An agent's run as a conversation (``docs/agents.md``): each turn, each tool call with its
arguments and result, and each approval with who decided.

``django_workflows.ai.run_agent`` journals each part of an agent's run as a step named
``<agent>__conversation`` (its new messages, in Pydantic AI's JSON, and the usage so far),
and asks each approval as a task whose form notes the tool call (:data:`TOOL_CALL`). This
reads both back, with no import of Pydantic AI: the page and the API need none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..models import JournalEntry, WorkflowInstance, WorkflowTask

CONVERSATION = "__conversation"  # the journal step's name: <agent>__conversation
TOOL_CALL = "x-tool-call"  # an approval's form notes its call: {"id", "tool"}
APPROVE, REASON = "approve", "reason"  # an approval's form's own fields


@dataclass
class Approval:
    """A person's decision on a tool call: its task, open until someone decides."""

    task: str
    status: str  # the task's: open, done, cancelled
    approved: bool | None = None
    reason: str = ""
    decided_by: str | None = None
    decided_at: datetime | None = None
    changed: dict[str, Any] = field(default_factory=dict)  # the arguments the person changed


@dataclass
class ToolCall:
    """A tool the model called, with what it was given and what it gave back."""

    id: str
    name: str
    args: Any
    result: Any = None
    outcome: str | None = None  # success, denied, failed, retried; None until it returns
    approval: Approval | None = None


@dataclass
class Turn:
    """What the user (or the instructions) said, or what the model answered."""

    role: Literal["user", "instructions", "model"]
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    model: str | None = None
    usage: Mapping[str, Any] | None = None  # a model's turn's


@dataclass
class Conversation:
    """One agent's run in one operation's durable code."""

    operation: str
    agent: str
    turns: list[Turn] = field(default_factory=list)
    usage: Mapping[str, Any] = field(default_factory=dict)  # the whole run's, so far


def conversations_of(instance: WorkflowInstance) -> list[Conversation]:
    """The agent runs of the instance's operations, in the order of their journals."""
    operations = {op.journal: op.id for op in instance.snap.operations if op.journal}
    if not operations:
        return []
    rows = (JournalEntry.objects.filter(instance=instance, journal__in=list(operations),
                                        kind="step", name__endswith=CONVERSATION)
            .order_by("journal", "position").values_list("journal", "name", "value"))
    found: dict[tuple[str, str], Conversation] = {}
    calls: dict[str, ToolCall] = {}
    for journal, name, value in rows:
        agent = name[:-len(CONVERSATION)]
        conversation = found.setdefault((journal, agent),
                                        Conversation(operations[journal], agent))
        _read(conversation, (value or {}).get("messages") or (), calls)
        conversation.usage = (value or {}).get("usage") or {}
    _approvals(instance, calls)
    return list(found.values())


def _read(conversation: Conversation, messages: Iterable[Mapping[str, Any]],
          calls: dict[str, ToolCall]) -> None:
    for message in messages:
        parts = message.get("parts") or ()
        if message.get("kind") == "response":
            turn = Turn("model", _text(parts, "text"), model=message.get("model_name"),
                        usage=message.get("usage"))
            for part in parts:
                if part.get("part_kind") == "tool-call":
                    call = ToolCall(str(part.get("tool_call_id")), str(part.get("tool_name")),
                                    part.get("args"))
                    calls[call.id] = call
                    turn.tool_calls.append(call)
            conversation.turns.append(turn)
            continue
        instructions = "\n".join(filter(None, [str(message.get("instructions") or ""),
                                                _text(parts, "system-prompt")]))
        if instructions:
            conversation.turns.append(Turn("instructions", instructions))
        if said := _text(parts, "user-prompt"):
            conversation.turns.append(Turn("user", said))
        for part in parts:
            answered = calls.get(str(part.get("tool_call_id")))
            if answered is None:
                continue
            if part.get("part_kind") == "tool-return":
                answered.result = part.get("content")
                answered.outcome = part.get("outcome", "success")
            elif part.get("part_kind") == "retry-prompt":
                answered.result, answered.outcome = part.get("content"), "retried"


def _text(parts: Iterable[Mapping[str, Any]], kind: str) -> str:
    return "\n".join(str(p.get("content")) for p in parts
                     if p.get("part_kind") == kind and isinstance(p.get("content"), str))


def _approvals(instance: WorkflowInstance, calls: Mapping[str, ToolCall]) -> None:
    """Each call's approval, from the task whose form notes it (the last, if it was asked
    again after a retry from an earlier step)."""
    if not calls:
        return
    tasks = (WorkflowTask.objects.filter(instance=instance, asked__isnull=False)
             .select_related("completed_by").order_by("created_at"))
    for task in tasks:
        noted = ((task.asked or {}).get("form") or {}).get(TOOL_CALL) or {}
        call = calls.get(str(noted.get("id")))
        if call is None:
            continue
        decision = task.input or {}
        asked = ((task.asked or {}).get("form") or {}).get("properties") or {}
        call.approval = Approval(
            str(task.pk), task.status,
            approved=bool(decision.get(APPROVE)) if task.status == "done" else None,
            reason=str(decision.get(REASON) or ""),
            decided_by=task.completed_by.get_username() if task.completed_by else None,
            decided_at=task.completed_at,
            changed={name: value for name, value in decision.items()
                     if name not in (APPROVE, REASON) and name in asked
                     and asked[name].get("default") != value})
