"""Durable code with the database: the journal in its table, a signal and a person's
decision that wake the code, and each side effect made once (its notes)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_workflows import services
from django_workflows.exceptions import NotAllowed
from django_workflows.models import JournalEntry, WorkflowInstance, WorkflowTask
from tests.factories import UserFactory
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit


def charged() -> list[str]:
    return sorted(text.split(" by ")[0] for text in
                  Note.objects.filter(text__startswith="charged").values_list("text", flat=True))


def user_in(group: str):
    user = UserFactory()
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def journal(instance) -> list[tuple[int, str, str]]:
    return list(JournalEntry.objects.filter(instance=instance).order_by("position")
                .values_list("position", "kind", "name"))


@pytest.mark.parametrize("workflow", ["durable-billing", "async-billing"])
def test_the_invoice_run_charges_once_sleeps_waits_and_asks(workflow):
    instance = services.create(workflow, state={"lines": [1, 2], "intent": "pi_9"}, start=True)

    instance.refresh_from_db()
    assert (instance.awaiting, instance.correlation) == ("paid", "pi_9")
    assert instance.snap.operation("bill").status == "suspended"
    assert charged() == ["charged 1", "charged 2"]
    assert journal(instance) == [(0, "step", "charge-1"), (1, "step", "charge-2"),
                                 (2, "sleep", "sleep")]

    with pytest.raises(NotAllowed):
        services.signal(workflow, "paid", {"amount": 7}, correlation="pi_9", user=UserFactory())
    services.signal(workflow, "paid", {"amount": 7}, correlation="pi_9",
                    user=user_in("payment-bots"))

    task = WorkflowTask.objects.get(instance=instance, status="open")
    assert (task.title, task.candidates, task.asked["form"]["required"]) == (
        "Review the invoice", ["group:managers"], ["approve"])
    assert charged() == ["charged 1", "charged 2"]  # the replay ran no step again

    services.complete(instance, input={"approve": True}, user=user_in("managers"))

    instance = WorkflowInstance.objects.get(pk=instance.pk)
    assert instance.current_step == "done"
    assert instance.snap.operation("bill").result == {
        "charged": ["ch_1", "ch_2"], "paid": 7, "approved": True}
    assert charged() == ["charged 1", "charged 2"]
    assert [kind for _, kind, _ in journal(instance)] == [
        "step", "step", "sleep", "signal", "task"]


def test_a_step_is_one_insert_and_the_first_attempt_reads_no_journal():
    with CaptureQueriesContext(connection) as queries:
        instance = services.create("durable-charges", state={"lines": [1, 2, 3]}, start=True)

    journaled = [q["sql"] for q in queries.captured_queries
                 if "django_workflows_journalentry" in q["sql"]]
    assert [sql.split()[0] for sql in journaled] == ["INSERT"] * 3
    assert journal(instance) == [(0, "step", "charge-1"), (1, "step", "charge-2"),
                                 (2, "step", "charge-3")]


def test_what_a_task_asked_by_code_shows_comes_from_its_keys_or_its_hook():
    from django_workflows import Operation, Step, Task, Workflow, registry
    from django_workflows.reading import inbox

    def run(ctx):
        ctx.ask(Task({"type": "object"}, title="By keys", show=["customer"]))
        ctx.ask(Task({"type": "object"}, title="By a hook",
                     show=lambda ctx: [("Declined", f"line 2 of {ctx.state['customer']}")]))

    registry.register(Workflow(id="shows", initial={"customer": "Ada"}, steps=[
        Step("ask", operations=[Operation("ask", run=run, durable=True)])]))
    try:
        instance = services.create("shows", start=True)
        first = WorkflowTask.objects.get(instance=instance, status="open")
        assert [(line.label, line.value) for line in inbox.shown_for(first, instance)] == [
            ("Customer", "Ada")]
        services.complete(instance, input={})
        second = WorkflowTask.objects.get(instance=instance, status="open")
        assert [(line.label, line.value) for line in inbox.shown_for(second, instance)] == [
            ("Declined", "line 2 of Ada")]
    finally:
        registry.unregister("shows")


def test_the_event_log_and_the_timeline_name_a_task_asked_by_code_by_its_own_title():
    from django_workflows.admin.events import sentence
    from django_workflows.admin.timeline import timeline_context

    instance = services.create("durable-billing", state={"lines": [1], "intent": "pi_3"},
                               start=True)
    services.signal("durable-billing", "paid", {"amount": 1}, correlation="pi_3")
    instance = WorkflowInstance.objects.get(pk=instance.pk)

    opened = instance.events.get(type="task-open")
    assert sentence(opened).startswith("The task “Review the invoice” opened")
    assert "task: Review the invoice" in timeline_context(instance)["timeline"]


@pytest.mark.postgres
def test_async_durable_code_leaves_no_database_session_open_behind_it():
    """Its journal is read and written in a thread of the attempt's, whose connection is
    closed when the attempt ends (not left to the garbage collector, where PostgreSQL
    would keep the session, and a test database could not be dropped)."""
    from django.db import connection

    def sessions() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            return cursor.fetchone()[0]

    before = sessions()
    instance = services.create("async-billing", state={"lines": [1, 2], "intent": "pi_5"},
                               start=True)
    services.signal("async-billing", "paid", {"amount": 2}, correlation="pi_5")

    assert WorkflowTask.objects.filter(instance=instance, status="open").exists()
    assert sessions() == before
