"""Tool calls that need a person's approval, asked as tasks (``docs/agents.md``).

A tool made with ``requires_approval=True`` (or one that raises ``ApprovalRequired``) ends
the agent's run with ``DeferredToolRequests``. Each call it holds becomes a task: its form
is the tool's argument schema, each argument filled in with what the model asked for (so
the person may change an amount), plus ``approve`` and ``reason``. The decision goes back
to the agent as Pydantic AI's ``ToolApproved`` (with the changed arguments) or
``ToolDenied`` (with the reason, which the model reads).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.agent import AbstractAgent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.tools import ToolApproved, ToolDenied
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from ..engine.definition import Task
from ..reading.conversations import APPROVE, REASON, TOOL_CALL

DENIED = "A person denied this call."


@dataclass(frozen=True)
class Approvals:
    """Who approves the agent's tool calls, and what they see: a task's options
    (``docs/tasks.md``). ``candidates`` and ``show`` are as for any task (a list, or a hook
    of the operation's context); ``show=None`` shows the tool and what the agent said when
    it asked. ``title``: the task's title, or a function of the tool's name; it names the
    wait in the journal, so keep it the same for the same tool.
    """

    candidates: Sequence[str] | Callable[[Any], Sequence[str]] = ()
    show: Sequence[str] | Callable[[Any], Any] | None = None
    title: str | Callable[[str], str] | None = None
    due: Any = None
    escalate_to: Sequence[str] = ()
    exclude_owner: bool = False
    denied: str = field(default=DENIED)  # what the model is told of a denial without a reason

    def task(self, call: ToolCallPart, form: dict[str, Any], said: str) -> Task:
        """The task that asks for ``call``'s approval."""
        if callable(self.title):
            title = self.title(call.tool_name)
        else:
            title = self.title or f'Approve "{call.tool_name}"'
        show = self.show
        if show is None:
            pairs = [("Tool", call.tool_name)] + ([("The agent said", said)] if said else [])
            show = lambda ctx: pairs  # noqa: E731 (read when the task opens)
        return Task(form, title=title, candidates=self.candidates, show=show, due=self.due,
                    escalate_to=self.escalate_to, exclude_owner=self.exclude_owner)


def tool_schema(agent: AbstractAgent[Any, Any], name: str) -> dict[str, Any] | None:
    """The JSON Schema of the arguments of the agent's function tool ``name``."""
    found: list[dict[str, Any]] = []

    def visit(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset) and name in toolset.tools:
            found.append(toolset.tools[name].tool_def.parameters_json_schema)

    for toolset in agent.toolsets:
        toolset.apply(visit)
    return copy.deepcopy(found[0]) if found else None


def _schema_of(value: Any) -> dict[str, Any]:
    """A property's schema told from its value, for a tool whose schema is not at hand
    (an MCP server's): text, a number, a boolean, or else JSON."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {}


def approval_form(call: ToolCallPart, args: Mapping[str, Any],
                  schema: dict[str, Any] | None) -> dict[str, Any]:
    """The form of ``call``'s task: the tool's arguments as asked (each property's
    ``default``), then ``approve`` and ``reason``."""
    if schema is None or not isinstance(schema.get("properties"), dict):
        schema = {"type": "object", "properties": {k: _schema_of(v) for k, v in args.items()},
                  "required": list(args)}
    properties: dict[str, Any] = schema["properties"]
    clash = {APPROVE, REASON} & set(properties)
    if clash:
        raise ValueError(f'The tool "{call.tool_name}" has an argument named '
                         f'"{sorted(clash)[0]}", which its approval\'s form uses: rename it')
    for name, value in args.items():
        if name in properties:
            properties[name] = {**properties[name], "default": value}
    properties[APPROVE] = {"type": "boolean", "title": "Approve",
                           "description": "Run the call, with the arguments above"}
    properties[REASON] = {"type": "string", "title": "Reason",
                          "description": "Why; the agent reads it when you deny"}
    schema["required"] = [*schema.get("required", ()), APPROVE]
    schema.setdefault("type", "object")
    schema[TOOL_CALL] = {"id": call.tool_call_id, "tool": call.tool_name}
    return schema


def said_before(response: ModelResponse | None) -> str:
    """What the model wrote in the response that made the calls."""
    if response is None:
        return ""
    return " ".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()


def decided(call: ToolCallPart, args: Mapping[str, Any], decision: Mapping[str, Any],
            denied: str) -> ToolApproved | ToolDenied:
    """The person's decision as Pydantic AI's result of the call."""
    if not decision.get(APPROVE):
        return ToolDenied(str(decision.get(REASON) or "").strip() or denied)
    given = {name: value for name, value in decision.items() if name not in (APPROVE, REASON)}
    return ToolApproved(override_args=given if given != dict(args) else None)
