"""The agent's run as a conversation: read from the journal and the approval's task (each
turn, each tool call with its arguments and result, who decided), and on the instance page."""

from __future__ import annotations

import html as html_module
import re

import pytest
from django.test import Client
from django.urls import reverse

from django_workflows import services
from django_workflows.models import WorkflowInstance
from django_workflows.reading.conversations import conversations_of
from tests.ai.assistant import ASKED, WORKFLOW, refunder, register_assistant
from tests.ai.scripted import RefundScript
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit


def approved_run() -> WorkflowInstance:
    register_assistant(RefundScript())
    instance = services.create(WORKFLOW, state={"order": "A-1"}, start=True)
    services.complete(instance, input={**ASKED, "amount": 20, "approve": True,
                                       "reason": "half was used"}, user=refunder("rita"))
    return WorkflowInstance.objects.get(pk=instance.pk)


def test_the_conversation_has_each_turn_each_call_and_who_approved():
    [conversation] = conversations_of(approved_run())

    assert (conversation.operation, conversation.agent) == ("assist", "refunds")
    assert [(turn.role, turn.text) for turn in conversation.turns] == [
        ("user", "Please refund A-1"),
        ("model", ""),
        ("model", "The parcel of A-1 arrived broken: a full refund."),
        ("model", "Dear customer: 20 EUR of A-1 refunded.")]
    [look_up] = conversation.turns[1].tool_calls
    assert (look_up.name, look_up.args, look_up.result, look_up.approval) == (
        "look_up_order", {"order": "A-1"}, {"order": "A-1", "customer": "Ada", "total": 30}, None)
    [refund] = conversation.turns[2].tool_calls
    assert (refund.name, refund.args, refund.result, refund.outcome) == (
        "refund", ASKED, "20 EUR of A-1 refunded.", "success")
    approval = refund.approval
    assert (approval.status, approval.approved, approval.decided_by, approval.reason,
            approval.changed) == ("done", True, "rita", "half was used", {"amount": 20})
    assert conversation.usage["requests"] == 3
    assert conversation.turns[3].usage["output_tokens"] > 0


def test_a_call_waiting_for_approval_shows_its_open_task_and_no_result_yet():
    register_assistant(RefundScript())
    instance = services.create(WORKFLOW, state={"order": "A-1"}, start=True)

    [conversation] = conversations_of(WorkflowInstance.objects.get(pk=instance.pk))

    [refund] = conversation.turns[-1].tool_calls
    assert (refund.name, refund.outcome, refund.approval.status) == ("refund", None, "open")


def test_a_denial_shows_who_denied_and_what_the_agent_was_told():
    register_assistant(RefundScript())
    instance = services.create(WORKFLOW, state={"order": "A-1"}, start=True)
    services.complete(instance, input={**ASKED, "approve": False, "reason": "came back intact"},
                      user=refunder("rita"))

    [conversation] = conversations_of(WorkflowInstance.objects.get(pk=instance.pk))

    [refund] = conversation.turns[2].tool_calls
    assert (refund.outcome, refund.result) == ("denied", "came back intact")
    assert (refund.approval.approved, refund.approval.decided_by) == (False, "rita")


def test_the_instance_page_shows_the_conversation():
    instance = approved_run()
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    html = client.get(reverse("admin:django_workflows_workflowinstance_change",
                              args=[instance.pk])).content.decode()

    section = re.search(r'<section class="module dwf-conversation".*?</section>', html,
                        re.DOTALL)
    assert section is not None
    text = html_module.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section.group(0))))
    for said in ["Agent refunds in assist", "Asked Please refund A-1",
                 "Calls look_up_order with", '"customer": "Ada"',
                 "The parcel of A-1 arrived broken: a full refund.", "Calls refund with",
                 "Approved by rita", "half was used", "changed amount to 20",
                 "It returned 20 EUR of A-1 refunded.", "Dear customer: 20 EUR of A-1 refunded.",
                 "The run so far: 3 model requests, 2 tool calls"]:
        assert said in text, said
    assert text.index("Calls look_up_order") < text.index("Approved by rita") < \
        text.index("Dear customer")
