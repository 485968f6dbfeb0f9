"""Retry from a step of an operation's journal, with the database: the entries from there
are deleted in the retry's own transaction, and the code runs those steps again (their
notes say what ran)."""

from __future__ import annotations

import pytest
from django.db import transaction

from django_workflows import services
from django_workflows.exceptions import InstanceNotFound, WorkflowNotMoved
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.factories import UserFactory
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db(transaction=True)  # the immediate runner runs on commit


def notes() -> list[str]:
    return list(Note.objects.exclude(text__startswith="rate ").order_by("pk")
                .values_list("text", flat=True))


def journal(instance) -> list[tuple[int, str, object]]:
    return list(JournalEntry.objects.filter(instance=instance).order_by("position")
                .values_list("position", "name", "value"))


def failed_quote() -> WorkflowInstance:
    Note.objects.create(text="rate 0")  # stale: the step "price" fails on it
    instance = services.create("durable-quote", start=True)
    instance.refresh_from_db()
    assert instance.status == "failed"
    assert journal(instance) == [(0, "load", [1, 2]), (1, "rate", 0)]
    return instance


def test_retry_from_a_step_deletes_its_entries_and_the_code_runs_them_again():
    instance = failed_quote()
    Note.objects.create(text="rate 5")

    services.retry(instance, operation="quote", from_step=1)

    instance = WorkflowInstance.objects.get(pk=instance.pk)
    assert instance.current_step == "done"
    assert instance.snap.operation("quote").result == 15
    assert journal(instance) == [(0, "load", [1, 2]), (1, "rate", 5), (2, "price", 15)]
    assert notes() == ["loaded", "read rate 0", "read rate 5", "priced 15"]  # loaded once
    retry = instance.events.get(type="retry")
    assert retry.data == {"operation": "quote", "from_step": 1, "entries_deleted": 1}


def test_a_plain_retry_replays_the_stale_rate_and_fails_again():
    instance = failed_quote()
    Note.objects.create(text="rate 5")

    services.retry(instance)

    instance.refresh_from_db()
    assert instance.status == "failed"
    assert notes() == ["loaded", "read rate 0"]
    assert journal(instance) == [(0, "load", [1, 2]), (1, "rate", 0)]


def test_a_refused_retry_from_a_step_names_its_code_and_deletes_nothing():
    instance = failed_quote()

    with pytest.raises(WorkflowNotMoved) as refused:
        services.retry(instance, operation="quote", from_step=2)

    assert refused.value.code == "no_journal_entry"
    assert str(refused.value.reason) == ('The journal of operation "quote" has no entry at '
                                         "position 2: it holds 2 (0 to 1)")
    assert journal(instance) == [(0, "load", [1, 2]), (1, "rate", 0)]
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "failed"


def test_the_entries_go_in_the_retry_s_transaction():
    instance = failed_quote()
    Note.objects.create(text="rate 5")

    with pytest.raises(RuntimeError), transaction.atomic():
        services.retry(instance, operation="quote", from_step=0)
        raise RuntimeError("the caller's transaction rolls back")

    assert journal(instance) == [(0, "load", [1, 2]), (1, "rate", 0)]  # back with it
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "failed"


def test_an_owner_retries_from_a_step_and_another_user_may_not():
    owner = UserFactory()
    Note.objects.create(text="rate 0")
    instance = services.create("durable-quote", start=True, user=owner)

    with pytest.raises(InstanceNotFound):  # not theirs: as if it did not exist
        services.retry(instance, operation="quote", from_step=1, user=UserFactory())
    assert len(journal(instance)) == 2

    Note.objects.create(text="rate 2")
    services.retry(instance, operation="quote", from_step=1, user=owner)
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "done"


def test_what_applies_now_answers_for_each_entry_of_the_journal():
    instance = failed_quote()

    found = services.applies_to_journal(instance, positions={"quote": [0, 1, 5]})

    assert found["retry"]["quote"][1].allowed
    assert "its entry from there is deleted" in found["retry"]["quote"][1].confirm
    assert (found["retry"]["quote"][5].allowed, found["retry"]["quote"][5].code) == (
        False, "no_journal_entry")
