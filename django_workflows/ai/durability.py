"""A Pydantic AI agent made durable by django-workflows' durable code (``docs/agents.md``).

:class:`DjangoWorkflowsDurability` is a capability built on Pydantic AI's public surface for
durable engines (``pydantic_ai.durable_exec``): the base wraps the agent's model and
toolsets, and hands each unit of work (a model request, a tool call, a toolset's
discovery) to :class:`StepBackend`, which runs it as one ``await ctx.step(name, ...)`` of
the operation whose code runs the agent. Its result is journaled as JSON (``JSON_CODEC``);
a replay takes it from the journal instead of calling the model or the tool again.

Which operation that is, is known while :func:`~django_workflows.ai.run.run_agent` runs the
agent (a context variable); outside it, the capability lets the agent run as it would
without it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_ai.agent import AbstractAgent
from pydantic_ai.durable_exec import (
    JSON_CODEC,
    BaseDurabilityCapability,
    DurabilityEngineSpec,
    DurableOperationId,
    JournalCallableOperationBackend,
    RoleBasedOperationConfig,
)
from pydantic_ai.models import Model, ModelResolutionContext
from pydantic_ai.tools import AgentDepsT

from ..engine.attempts import OperationContext
from ..engine.errors import Cancelled
from ..engine.journal import ReplayMismatch
from .configured import configured_model, model_with_key

# The operation whose durable code runs the agent now (set by run_agent).
running_in: ContextVar[OperationContext | None] = ContextVar("django_workflows_ai_ctx",
                                                             default=None)

NAME_LENGTH = 200  # the journal's column


@dataclass(frozen=True)
class StepRetries:
    """How often a step of the agent is tried again within its attempt (``ctx.step``'s
    ``retries``, ``retry_delay``, ``backoff``) before its error fails the attempt."""

    retries: int = 0
    retry_delay: float = 1.0
    backoff: float = 2.0


def step_name(name: str) -> str:
    """``name`` as the journal keeps it: a long one is cut, with a digest of the whole, so
    that two long names stay apart and the same one stays the same."""
    if len(name) <= NAME_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{name[:NAME_LENGTH - 17]}~{digest}"


class StepBackend(JournalCallableOperationBackend[StepRetries]):
    """Runs each unit of the agent's work as one step of the operation's durable code."""

    async def execute(self, *, operation_id: DurableOperationId, name: str,
                      body: Callable[[], Awaitable[object]], cache_key: tuple[object, ...],
                      config: StepRetries) -> object:
        ctx = running_in.get()
        assert ctx is not None  # the base asks for a unit only in a durable context
        return await ctx.step(step_name(name), body, retries=config.retries,
                              retry_delay=config.retry_delay, backoff=config.backoff)


@dataclass(init=False, kw_only=True)
class DjangoWorkflowsDurability(BaseDurabilityCapability[AgentDepsT]):
    """The capability that makes an agent durable in an operation's durable code.

    ``Agent(..., name="refunds", capabilities=[DjangoWorkflowsDurability()])``, then
    ``await run_agent(ctx, agent, prompt)`` in ``async def`` durable code: each model
    request and each tool call is a step of the operation's journal.

    ``model_retries`` and ``tool_retries``: how a failing model request or tool call is
    tried again within the attempt (none, by default: the operation's own ``retries``
    then run the code again, and the steps done answer from the journal). ``models``: the
    models a run may switch to by key, as Pydantic AI's other engines take them; ``name``:
    the agent's name in the journal's steps (default: the agent's ``name``).
    """

    engine_spec = DurabilityEngineSpec(
        engine_name="django-workflows",
        durable_unit_noun="step",
        durable_container_noun="durable operation",
        codec=JSON_CODEC,  # the journal keeps JSON
        # Toolsets are entered in the worker's process, which runs the steps too.
        toolset_lifecycles={"function": "enter-always", "mcp": "enter-in-durable-unit",
                            "dynamic": "enter-never"},
        # A replay matches steps by their order: tool calls run one after another.
        sequential_tools_in_durable_context=True,
        cancellation_error_types=(Cancelled,),
        nondeterminism_error_types=(ReplayMismatch,),
    )

    def __init__(self, *, model_retries: StepRetries | None = None,
                 tool_retries: StepRetries | None = None,
                 models: Mapping[str, Model] | None = None, name: str | None = None) -> None:
        super().__init__(models=models, name=name)
        self._model_retries = model_retries or StepRetries()
        self._tool_retries = tool_retries or StepRetries()

    @property
    def in_durable_context(self) -> bool:
        return running_in.get() is not None

    def get_durable_operation_backend(self) -> StepBackend:
        return StepBackend(
            agent_name=self.name, default_model_id=self.default_model_id,
            config=RoleBasedOperationConfig(model=self._model_retries, event=StepRetries(),
                                            capability=StepRetries(), tool=self._tool_retries))

    # -- the model from the settings (AI_MODEL, AI_API_KEY) -------------------------------

    def get_model(self) -> Any:
        """The settings' ``AI_MODEL`` for an agent made without a model of its own."""
        agent: AbstractAgent[Any, Any] | None = self.agent
        return configured_model() if agent is not None and agent.model is None else None

    async def resolve_model_id(self, ctx: ModelResolutionContext[AgentDepsT], *,
                               model_id: str) -> Model | None:
        """A registered model, or the model a name gives with the settings' ``AI_API_KEY``
        (when it is that key's provider's)."""
        return await super().resolve_model_id(ctx, model_id=model_id) or model_with_key(model_id)
