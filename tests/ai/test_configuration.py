"""The model from the settings, as Pydantic AI names models: AI_MODEL for an agent made
without one, AI_API_KEY for AI_MODEL's provider only. No test calls a network model:
"test" is Pydantic AI's own name for its TestModel."""

from __future__ import annotations

from django.test import override_settings
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from django_workflows.ai import DjangoWorkflowsDurability
from django_workflows.ai.configured import model_with_key
from tests.ai.test_durable_agents import assistant, journal
from tests.engine.helpers_work import op, started


@override_settings(DJANGO_WORKFLOWS={"AI_MODEL": "test"})
def test_an_agent_made_without_a_model_runs_on_the_model_the_settings_name():
    agent = Agent(name="helper", capabilities=[DjangoWorkflowsDurability()])

    x, i = started(assistant(agent))

    assert op(x, i, "assist").result == "success (no tool calls)"
    assert journal(x, i)[0] == ("step", "helper__model.request.test")


@override_settings(DJANGO_WORKFLOWS={"AI_MODEL": "test"})
def test_the_agent_s_own_model_comes_before_the_settings():
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("from the agent's own model")])

    agent = Agent(FunctionModel(answer), name="own", capabilities=[DjangoWorkflowsDurability()])

    x, i = started(assistant(agent))

    assert op(x, i, "assist").result == "from the agent's own model"
    assert journal(x, i)[0] == ("step", "own__model.request")


@override_settings(DJANGO_WORKFLOWS={"AI_MODEL": "openai:gpt-5.2", "AI_API_KEY": "sk-test"})
def test_the_api_key_is_for_the_provider_of_ai_model_only():
    assert model_with_key("anthropic:claude-sonnet-4-5") is None  # its own environment's
    assert model_with_key("test") is None


@override_settings(DJANGO_WORKFLOWS={"AI_MODEL": "openai:gpt-5.2"})
def test_without_an_api_key_the_provider_reads_its_environment_as_pydantic_ai_does():
    assert model_with_key("openai:gpt-5.2") is None
