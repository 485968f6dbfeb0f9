"""``run_agent``: a Pydantic AI agent's run as durable code, its approvals asked as tasks.

The run goes on until the agent gives its output. Each time it stops for tool calls that
need approval (``DeferredToolRequests``), each call is asked as a task (``ctx.ask``), and the
agent runs on from its messages with the decisions. After each part of the run its new
messages and the usage so far are journaled as a step (``<agent>__conversation``), so the
conversation is kept with the operation, and a replay reads it back as it reads the rest.

The agent's plain (not ``async``) tools run in one thread of the run's own, whose database
connections are closed when the run ends: Pydantic AI's own threads would keep them open
until the garbage collector found them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connections
from pydantic_ai.agent import AbstractAgent, AgentRunResult
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python

from ..engine.attempts import OperationContext
from ..reading.conversations import CONVERSATION
from .approvals import Approvals, approval_form, decided, said_before, tool_schema
from .durability import NAME_LENGTH, DjangoWorkflowsDurability, running_in


def conversation_step(agent_name: str) -> str:
    """The journal's step of a part of the run: ``<agent>__conversation``."""
    name = f"{agent_name}{CONVERSATION}"
    if len(name) > NAME_LENGTH:
        raise ValueError(f'The agent\'s name "{agent_name}" is too long for the journal: '
                         f"give it at most {NAME_LENGTH - len(CONVERSATION)} characters")
    return name


async def run_agent(ctx: OperationContext, agent: AbstractAgent[Any, Any],
                    user_prompt: str | Sequence[Any] | None = None, *,
                    approvals: Approvals | None = None,
                    message_history: Sequence[ModelMessage] | None = None,
                    output_type: Any = None, **options: Any) -> AgentRunResult[Any]:
    """Run ``agent`` in the durable code of ``ctx``'s operation (``async def``,
    ``durable=True`` when a tool needs approval); its result, whose ``all_messages()`` and
    ``usage`` are the whole run's.

    Each model request and each tool call is a step of the operation's journal. A tool
    call that needs approval is asked as a task (``approvals``: who, and what they see;
    ``Approvals()`` by default, which only superusers may decide). ``options`` go to
    ``agent.run`` (``deps``, ``model``, ``model_settings``, ``usage_limits``, ...).
    """
    durability = DjangoWorkflowsDurability.from_agent(agent)
    if durability is None:
        raise TypeError(f'The agent "{agent.name}" is not durable: give it '
                        "capabilities=[DjangoWorkflowsDurability()]")
    if not getattr(ctx, "asynchronous", False):
        raise TypeError("run_agent runs in async def code: make the operation's run "
                        "`async def run(ctx)` and `await run_agent(ctx, ...)`")
    approvals = approvals or Approvals()
    output = [output_type if output_type is not None else agent.output_type,
              DeferredToolRequests]
    options.setdefault("usage", RunUsage())  # the whole run's, across its parts
    name = durability.name
    with ThreadPoolExecutor(1, thread_name_prefix=f"agent-{name}-tools") as tools:
        try:
            with agent.using_thread_executor(tools):
                return await _converse(ctx, agent, conversation_step(name), approvals,
                                       user_prompt, list(message_history or ()),
                                       output_type=output, **options)
        finally:
            await asyncio.get_running_loop().run_in_executor(tools, connections.close_all)


async def _converse(ctx: OperationContext, agent: AbstractAgent[Any, Any], kept_as: str,
                    approvals: Approvals, prompt: str | Sequence[Any] | None,
                    history: list[ModelMessage], **options: Any) -> AgentRunResult[Any]:
    """The agent's run, part after part, until it gives its output."""
    results: DeferredToolResults | None = None
    while True:
        token = running_in.set(ctx)
        try:
            result: AgentRunResult[Any] = await agent.run(
                prompt, message_history=history or None, deferred_tool_results=results,
                **options)
        finally:
            running_in.reset(token)
        await _keep(ctx, kept_as, result)
        requests = result.output
        if not isinstance(requests, DeferredToolRequests):
            return result
        if requests.calls:
            names = ", ".join(sorted({call.tool_name for call in requests.calls}))
            raise TypeError(f"The agent deferred calls of {names} to be run outside it; "
                            "run_agent answers approvals only")
        history, prompt = result.all_messages(), None
        results = await _ask(ctx, agent, approvals, requests, _last_response(history))


async def _keep(ctx: OperationContext, step: str, result: AgentRunResult[Any]) -> None:
    """Journal the part of the run that ended: its new messages and the usage so far."""
    kept = {"messages": ModelMessagesTypeAdapter.dump_python(result.new_messages(), mode="json"),
            "usage": to_jsonable_python(result.usage)}
    await ctx.step(step, lambda: kept)


async def _ask(ctx: OperationContext, agent: AbstractAgent[Any, Any], approvals: Approvals,
               requests: DeferredToolRequests, response: ModelResponse | None
               ) -> DeferredToolResults:
    """Each call's task, one after another; their decisions as the agent takes them."""
    said = said_before(response)
    results = DeferredToolResults()
    for call in requests.approvals:
        args = requests.validated_args.get(call.tool_call_id) or call.args_as_dict()
        form = approval_form(call, args, tool_schema(agent, call.tool_name))
        decision = await ctx.ask(approvals.task(call, form, said))
        results.approvals[call.tool_call_id] = decided(call, args, decision, approvals.denied)
    return results


def _last_response(messages: Sequence[ModelMessage]) -> ModelResponse | None:
    return next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
