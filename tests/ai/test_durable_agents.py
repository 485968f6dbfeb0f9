"""A Pydantic AI agent as durable code, on the LocalExecutor: each model request and tool
call a step of the journal, a retry that does not ask the model again for the turns it
had, and tool calls approved or denied by a person through a task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests

from django_workflows.ai import Approvals, DjangoWorkflowsDurability, StepRetries, run_agent
from django_workflows.engine import Operation, Step, Transition, Workflow
from django_workflows.testing.local import LocalExecutor
from tests.ai.scripted import RefundScript, refund_agent
from tests.engine.helpers_work import op, started

PROMPT = "Please refund A-1"
ASKED = {"order": "A-1", "amount": 30, "why": "arrived broken"}


def assistant(agent: Agent[None, str], approvals: Approvals | None = None,
              **options: Any) -> Workflow:
    async def run(ctx):
        result = await run_agent(ctx, agent, PROMPT, approvals=approvals)
        return result.output

    return Workflow("assist", initial={"order": "A-1"}, steps=[
        Step("assist", advance="auto", operations=[
            Operation("assist", run=run, durable=True, **options)]),
        Step("done")], transitions=[Transition("assist", "done")])


def journal(x: LocalExecutor, instance: str) -> list[tuple[str, str]]:
    return [(e.kind, e.name) for e in x.journal.entries(op(x, instance, "assist").journal)]


def decide(x: LocalExecutor, instance: str, **decision: Any) -> None:
    outcome = x.complete(instance, input={**ASKED, **decision})
    assert outcome.code is None, outcome


# -- steps --------------------------------------------------------------------------------


def test_each_model_request_and_tool_call_is_a_step_and_the_approval_a_task():
    ran: list[str] = []
    x, i = started(assistant(refund_agent(RefundScript(), ran.append)))
    decide(x, i, approve=True)

    assert journal(x, i) == [
        ("step", "refunds__model.request"),
        ("step", "refunds__function_toolset__<agent>.call_tool:look_up_order"),
        ("step", "refunds__model.request"),
        ("step", "refunds__conversation"),
        ("task", 'Approve "refund"'),
        ("step", "refunds__function_toolset__<agent>.call_tool:refund"),
        ("step", "refunds__model.request"),
        ("step", "refunds__conversation")]
    assert op(x, i, "assist").result == "Dear customer: 30 EUR of A-1 refunded."
    assert x.snapshot(i).current_step == "done"


@pytest.mark.parametrize("fails_on_call", [2, 3])
def test_a_retried_run_does_not_ask_the_model_again_for_the_turns_it_had(fails_on_call):
    """The attempt dies in the model's call 2 (after one turn) or 3 (after the approval
    and the refund); the retry replays the turns before it from the journal."""
    ran: list[str] = []
    script = RefundScript(fail_on_call=fails_on_call)
    x, i = started(assistant(refund_agent(script, ran.append), retries=1))
    if fails_on_call == 2:
        assert script.calls == 3  # 1, 2 (failed), 2 again: then it waits for the approval
    decide(x, i, approve=True)

    assert script.calls == 4  # three turns, and the one that failed
    assert ran == ["looked up A-1", "refunded 30 of A-1"]  # each tool ran once
    assert op(x, i, "assist").result == "Dear customer: 30 EUR of A-1 refunded."
    assert op(x, i, "assist").attempt == 2


def test_a_replay_after_the_decision_asks_the_model_only_for_the_next_turn():
    script = RefundScript()
    x, i = started(assistant(refund_agent(script, [].append)))
    assert script.calls == 2
    decide(x, i, approve=True)

    assert script.calls == 3  # the woken code replayed turns 1 and 2 from the journal


def test_a_failing_model_request_is_tried_again_within_the_attempt_by_its_retries():
    script = RefundScript(fail_on_call=1)
    agent = refund_agent(script, [].append,
                         model_retries=StepRetries(retries=1, retry_delay=0))
    x, i = started(assistant(agent))

    assert (op(x, i, "assist").status, op(x, i, "assist").attempt) == ("suspended", 1)
    entries = x.journal.entries(op(x, i, "assist").journal)
    assert (entries[0].name, entries[0].tries) == ("refunds__model.request", 2)


# -- approvals ----------------------------------------------------------------------------


def test_an_approval_opens_a_task_with_the_tool_s_arguments_in_its_form():
    agent = refund_agent(RefundScript(), [].append)
    x, i = started(assistant(agent, Approvals(candidates=["group:refunds"])))

    task = x.snapshot(i).task
    assert (task.title, task.operation, task.candidates) == (
        'Approve "refund"', "assist", ("group:refunds",))
    form = task.asked["form"]
    assert {name: field.get("default") for name, field in form["properties"].items()} == {
        "order": "A-1", "amount": 30, "why": "arrived broken", "approve": None, "reason": None}
    assert form["properties"]["amount"]["type"] == "integer"
    assert form["required"] == ["order", "amount", "why", "approve"]
    assert task.asked["show"] == [
        ["Tool", "refund"], ["The agent said", "The parcel of A-1 arrived broken: a full refund."]]


def test_an_approval_with_a_changed_amount_gives_the_tool_the_changed_amount():
    ran: list[str] = []
    x, i = started(assistant(refund_agent(RefundScript(), ran.append)))
    assert x.complete(i, input={**ASKED, "amount": "twenty", "approve": True}).code == \
        "invalid_input"  # the form holds the tool's schema
    decide(x, i, amount=20, approve=True)

    assert ran == ["looked up A-1", "refunded 20 of A-1"]
    assert op(x, i, "assist").result == "Dear customer: 20 EUR of A-1 refunded."


def test_a_denial_with_a_reason_reaches_the_agent_and_the_tool_does_not_run():
    ran: list[str] = []
    script = RefundScript()
    x, i = started(assistant(refund_agent(script, ran.append)))
    decide(x, i, approve=False, reason="The parcel was returned intact.")

    assert ran == ["looked up A-1"]
    told = [p for p in script.seen[-1][-1].parts if isinstance(p, ToolReturnPart)]
    assert [(p.tool_name, p.outcome, p.content) for p in told] == [
        ("refund", "denied", "The parcel was returned intact.")]
    assert op(x, i, "assist").result == "Dear customer, no refund: The parcel was returned intact."


def test_a_denial_without_a_reason_tells_the_agent_a_person_denied_it():
    script = RefundScript()
    x, i = started(assistant(refund_agent(script, [].append)))
    decide(x, i, approve=False)

    assert op(x, i, "assist").result == "Dear customer, no refund: A person denied this call."


def test_candidates_and_show_of_the_approvals_work_as_for_any_task():
    approvals = Approvals(candidates=lambda ctx: [f"group:{ctx.state['order']}-team"],
                          show=["order"], title=lambda tool: f"May the agent {tool}?")
    x, i = started(assistant(refund_agent(RefundScript(), [].append), approvals))

    task = x.snapshot(i).task
    assert (task.title, task.candidates, task.asked["show"]) == (
        "May the agent refund?", ("group:A-1-team",), ["order"])


def test_a_tool_argument_the_form_needs_for_itself_fails_the_run_naming_it():
    agent = Agent(TestModel(), name="clash", capabilities=[DjangoWorkflowsDurability()])

    @agent.tool_plain(requires_approval=True)
    def pay(approve: bool) -> str:
        return "paid"

    x, i = started(assistant(agent))

    assert op(x, i, "assist").status == "failed"
    assert 'The tool "pay" has an argument named "approve"' in op(x, i, "assist").error.message


# -- what the run keeps -------------------------------------------------------------------


def test_the_run_s_messages_and_usage_are_kept_in_the_journal():
    x, i = started(assistant(refund_agent(RefundScript(), [].append)))
    decide(x, i, amount=20, approve=True)

    kept = [e.value for e in x.journal.entries(op(x, i, "assist").journal)
            if e.name == "refunds__conversation"]
    parts = [(part["part_kind"], part.get("content") or part.get("args"))
             for part_of in kept for message in part_of["messages"]
             for part in message["parts"]]
    assert parts == [
        ("user-prompt", PROMPT),
        ("tool-call", {"order": "A-1"}),
        ("tool-return", {"order": "A-1", "customer": "Ada", "total": 30}),
        ("text", "The parcel of A-1 arrived broken: a full refund."),
        ("tool-call", ASKED),
        ("tool-return", "20 EUR of A-1 refunded."),
        ("text", "Dear customer: 20 EUR of A-1 refunded.")]
    assert kept[-1]["usage"]["requests"] == 3
    assert kept[-1]["usage"]["tool_calls"] == 2
    assert kept[-1]["usage"]["input_tokens"] > kept[0]["usage"]["input_tokens"] > 0


# -- refusals -----------------------------------------------------------------------------


def test_an_agent_without_the_capability_is_refused_naming_it():
    x, i = started(assistant(Agent(TestModel(), name="plain")))

    assert op(x, i, "assist").error.message == (
        'The agent "plain" is not durable: give it capabilities=[DjangoWorkflowsDurability()]')


def test_plain_code_is_told_to_be_async():
    agent = refund_agent(RefundScript(), [].append)

    def run(ctx):
        return run_agent(ctx, agent, PROMPT)

    wf = Workflow("plain", steps=[Step("a", operations=[Operation("a", run=run)])])
    x, i = started(wf)

    assert "run_agent runs in async def code" in op(x, i, "a").error.message


def test_outside_run_agent_the_agent_runs_as_it_would_without_the_capability():
    script = RefundScript()
    agent = refund_agent(script, [].append)

    result = agent.run_sync(PROMPT, output_type=[str, DeferredToolRequests])

    assert script.calls == 2 and result.output.approvals[0].tool_name == "refund"


def test_two_calls_to_approve_in_one_turn_are_asked_one_after_another():
    def two_refunds(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[
                ToolCallPart("refund", {"order": "A-1", "amount": 30, "why": "broken"}),
                ToolCallPart("refund", {"order": "B-2", "amount": 12, "why": "late"})])
        return ModelResponse(parts=[TextPart(" / ".join(str(p.content) for p in returned))])

    ran: list[str] = []
    agent = Agent(FunctionModel(two_refunds), name="refunds",
                  capabilities=[DjangoWorkflowsDurability()])

    @agent.tool_plain(requires_approval=True)
    def refund(order: str, amount: int, why: str) -> str:
        ran.append(f"refunded {amount} of {order}")
        return f"{amount} EUR of {order} refunded."

    x, i = started(assistant(agent))
    assert x.snapshot(i).task.asked["form"]["properties"]["order"]["default"] == "A-1"
    x.complete(i, input={"order": "A-1", "amount": 30, "why": "broken", "approve": True})
    assert x.snapshot(i).task.asked["form"]["properties"]["order"]["default"] == "B-2"
    x.complete(i, input={"order": "B-2", "amount": 12, "why": "late", "approve": False,
                         "reason": "not late"})

    assert ran == ["refunded 30 of A-1"]
    assert op(x, i, "assist").result == "30 EUR of A-1 refunded. / not late"
    assert [kind for kind, _ in journal(x, i)] == [
        "step", "step", "task", "task", "step", "step", "step"]


def test_tools_the_model_calls_at_once_run_one_after_another_and_replay_in_that_order():
    calls = []

    def look_up_two(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(len(messages))
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("wait_and_look_up", {"order": "slow"}),
                                        ToolCallPart("wait_and_look_up", {"order": "fast"})])
        if len(calls) == 2:
            raise RuntimeError("the worker died")
        return ModelResponse(parts=[TextPart(" ".join(str(p.content) for p in returned))])

    ran: list[str] = []
    agent = Agent(FunctionModel(look_up_two), name="looks",
                  capabilities=[DjangoWorkflowsDurability()])

    @agent.tool_plain
    async def wait_and_look_up(order: str) -> str:
        if order == "slow":
            await asyncio.sleep(0.05)  # run at once, "fast" would finish first
        ran.append(order)
        return order

    x, i = started(assistant(agent, retries=1))

    assert ran == ["slow", "fast"]  # each once, in the model's order; the retry replayed them
    assert op(x, i, "assist").result == "slow fast"
    assert len(calls) == 3
