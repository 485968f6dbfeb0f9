"""Nothing but the command's own writes happens under the row lock (DESIGN.md §6).

From the ``SELECT ... FOR UPDATE`` to the ``COMMIT``: the lock, one ``UPDATE``
of the instance, one ``INSERT`` of its events (and, with an idempotency key,
the key's ``UPDATE``). On PostgreSQL a command that calls no user code takes
the lock only inside the one statement that writes it. The answer is rendered
after the commit.
"""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from django_workflows.services.sql import statements
from django_workflows.services.sql.postgresql import PsycopgClientBinding
from tests import dbutil
from tests.factories import UserFactory, WorkflowInstanceFactory

from .conftest import url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.real_locks]


class Statements:
    """Every statement the connection runs, and where each commit fell among them."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        said = dbutil.spelled_out(sql, params)
        if said is not None:
            self.sql.append(said)
        return execute(sql, params, many, context)

    def mark_commits(self, monkeypatch) -> None:
        commit = connection.commit

        def marked() -> None:
            self.sql.append("COMMIT")
            commit()

        monkeypatch.setattr(connection, "commit", marked)

    def under_lock(self) -> list[str]:
        """The statements from the first row lock to the commit that followed it."""
        start = next(i for i, sql in enumerate(self.sql) if "FOR UPDATE" in sql)
        end = self.sql.index("COMMIT", start)
        return self.sql[start:end]


def verbs(statements: list[str]) -> list[str]:
    """What each statement does, in a word; the bounded lock wait is part of the lock."""
    found = []
    for sql in statements:
        for part in sql.split(";"):
            word = part.strip().split(" ", 1)[0].upper()
            if word and not ("set_config" in part and word == "SELECT"):
                found.append("LOCK" if "FOR UPDATE" in part else word)
    return found


def command(monkeypatch, instance, name: str, **headers) -> tuple[dict, list[str]]:
    """Post ``name`` as the instance's owner; the answer, and what ran under the lock."""
    body, seen = posted(monkeypatch, instance, name, **headers)
    return body, verbs(seen.under_lock())


def posted(monkeypatch, instance, name: str, **headers) -> tuple[dict, Statements]:
    """Post ``name`` as the instance's owner; the answer, and every statement it ran."""
    client = APIClient()
    client.force_authenticate(instance.owner)
    seen = Statements()
    seen.mark_commits(monkeypatch)
    with connection.execute_wrapper(seen):
        response = client.post(url(instance, name), **headers)
    assert response.status_code == 200, response.json()
    return response.json(), seen


def test_a_command_that_calls_no_user_code_is_one_read_and_one_fenced_write(monkeypatch):
    """PostgreSQL: the row read without a lock, then written in one statement only if it is
    still that row and nobody holds it; no BEGIN, no lock wait, no COMMIT of our own.
    Elsewhere: the lock, the instance's UPDATE, its events."""
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True,
                                       owner=UserFactory(username="owner"))

    body, seen = posted(monkeypatch, instance, "next")

    assert body["current_step"] == "s1"
    if connection.vendor == "postgresql":
        # After the view's own reads (the instance, the user's permissions):
        *_, read, written = seen.sql
        assert verbs([read]) == ["SELECT"]
        assert written.startswith("WITH") and "FOR UPDATE SKIP LOCKED" in written
        assert [sql for sql in seen.sql if "FOR UPDATE" in sql] == [written]
        assert "COMMIT" not in seen.sql
    else:
        assert verbs(seen.under_lock()) == ["LOCK", "UPDATE", "INSERT"]


def test_with_an_idempotency_key_a_command_holds_the_lock_only_for_its_own_writes(
        monkeypatch):
    """The key's row is written in the command's transaction, so it runs under the lock."""
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True,
                                       owner=UserFactory(username="owner"))

    body, under_lock = command(monkeypatch, instance, "next", HTTP_IDEMPOTENCY_KEY="step-1")

    assert body["current_step"] == "s1"
    assert under_lock == ["LOCK", "UPDATE", "INSERT", "UPDATE"]


def test_the_answer_is_read_after_the_commit(monkeypatch):
    """The answer shows the nested child (a query of its own): not while the rows are locked."""
    instance = WorkflowInstanceFactory(workflow="parent", started=True,
                                       owner=UserFactory(username="owner"))

    body, under_lock = command(monkeypatch, instance, "next", HTTP_IDEMPOTENCY_KEY="enter")

    assert (body["current_step"], body["nested"]["workflow"]) == ("check", "child-check")
    # The parent locked, the new child's row, the parent's row and the events, the key.
    assert under_lock == ["LOCK", "INSERT", "UPDATE", "INSERT", "UPDATE"]


def test_the_update_and_the_events_go_in_one_round_trip_where_the_database_allows(
        monkeypatch):
    """Under the lock (here: a key's command), as two round trips where several
    statements go at once."""
    instance = WorkflowInstanceFactory(workflow="long-manual", started=True,
                                       owner=UserFactory(username="owner"))

    _, seen = posted(monkeypatch, instance, "next", HTTP_IDEMPOTENCY_KEY="step-1")

    # PostgreSQL with client-side binding (psycopg 3's default) takes several at once.
    together = isinstance(statements(), PsycopgClientBinding)
    assert len(seen.under_lock()) == (3 if together else 4)  # with the key's UPDATE
    assert together == (connection.vendor == "postgresql")


@pytest.fixture
def one_operation():
    """One step whose one operation a worker runs, then the end."""
    from django_workflows import Operation, Step, Transition, Workflow, registry

    definition = Workflow(id="one-operation", steps=[
        Step("work", advance="auto", operations=[Operation("op", run=lambda ctx: "ok")]),
        Step("done")], transitions=[Transition("work", "done")])
    registry.register(definition, origin="tests.api.test_lock_hold")
    yield definition
    registry.unregister(definition.id)


def test_a_worker_claims_in_one_round_trip_and_records_its_result_with_the_instance(
        monkeypatch, one_operation):
    """The worker's own path: the claim's fenced UPDATE and the read of its work; then,
    under the lock, the instance, the attempt's row and the events, and nothing else."""
    from django.test import override_settings

    from django_workflows import services
    from django_workflows.engine import AttemptOutcome
    from django_workflows.models import Attempt, WorkflowInstance
    from tests.services.test_background import HOLDING, HoldingRunner

    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING}):
        instance = services.create("one-operation", start=True)
    (token,) = HoldingRunner.held
    claiming, finishing = Statements(), Statements()
    finishing.mark_commits(monkeypatch)

    with connection.execute_wrapper(claiming):
        claimed = services.claim_attempt(token, worker="w1")
    with connection.execute_wrapper(finishing):
        assert services.finish_attempt(token, AttemptOutcome(ok=True, value="ok"),
                                       instance_id=str(instance.pk), claimed_at=claimed.at)

    together = connection.vendor == "postgresql"
    assert [verbs([sql]) for sql in claiming.sql] == (
        [["UPDATE", "SELECT"]] if together else [["SELECT"], ["UPDATE"], ["SELECT"]])
    assert verbs(finishing.under_lock()) == ["LOCK", "UPDATE", "UPDATE", "INSERT"]
    assert len(finishing.under_lock()) == (2 if together else 4)
    attempt = Attempt.objects.get(token=token)
    assert (attempt.status, attempt.worker) == ("finished", "w1")
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "done"


def test_a_worker_records_its_result_on_the_instance_its_claim_read_in_one_statement(
        monkeypatch, one_operation):
    """Unchanged since the claim read it, the instance takes the result in one statement
    that checks it is so (PostgreSQL): no BEGIN, no lock to wait for, no second read.
    Other databases lock it as before."""
    from django.test import override_settings

    from django_workflows import services
    from django_workflows.engine import AttemptOutcome
    from django_workflows.models import Attempt, WorkflowInstance
    from tests.services.test_background import HOLDING, HoldingRunner

    HoldingRunner.held.clear()
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": HOLDING}):
        instance = services.create("one-operation", start=True)
    (token,) = HoldingRunner.held
    claimed = services.claim_attempt(token, worker="w1")
    finishing = Statements()
    finishing.mark_commits(monkeypatch)

    with connection.execute_wrapper(finishing):
        assert services.finish_claimed(claimed, AttemptOutcome(ok=True, value="ok"))

    if connection.vendor == "postgresql":
        (statement,) = finishing.sql
        assert statement.startswith("WITH") and "FOR UPDATE SKIP LOCKED" in statement
    else:
        assert verbs(finishing.under_lock()) == ["LOCK", "UPDATE", "UPDATE", "INSERT"]
    attempt = Attempt.objects.get(token=token)
    assert (attempt.status, attempt.worker) == ("finished", "w1")
    row = WorkflowInstance.objects.get(pk=instance.pk)
    assert (row.current_step, row.revision) == ("done", instance.revision + 1)
    added = row.events.filter(sequence__gt=instance.last_event).order_by("sequence")
    assert [(event.sequence, event.type, event.revision) for event in added] == [
        (instance.last_event + number, kind, row.revision) for number, kind in enumerate(
            ["operation-started", "operation-succeeded", "validate", "step-leave",
             "step-enter"], start=1)]
    assert row.last_event == instance.last_event + 5


@pytest.mark.parametrize("reference", [None, "A-1"], ids=["no reference", "a reference"])
def test_a_create_sets_a_savepoint_only_to_keep_its_key_from_a_taken_reference(reference):
    """The savepoint (two round trips) guards the idempotency key against the unique
    reference's IntegrityError; without a reference there is none to guard against."""
    from django_workflows import services

    seen = Statements()
    with connection.execute_wrapper(seen):
        services.create("long-manual", reference=reference)

    savepoints = [sql for sql in seen.sql if sql.upper().startswith("SAVEPOINT")]
    assert len(savepoints) == (1 if reference else 0)
    assert verbs(seen.sql).count("INSERT") == 1
