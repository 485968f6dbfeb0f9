"""The example's invoice run: durable code that charges each line once, sleeps until the
invoice is due, and asks a manager about the lines the bank declined (the immediate runner
and a fake clock: the sleep ends when the test moves time on)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Group

from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import JournalEntry, WorkflowTask
from example_project.shop.invoices import issue_invoice
from example_project.shop.models import Charge, ChargeRequest, InvoiceLine
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

DUE_IN = timedelta(days=14)
LINES = [("March: the Berlin branch's mugs", 25800, "pm_card_ok"),
         ("March: the Hamburg branch's T-shirts", 39800, "pm_card_declined"),
         ("March: the Munich branch's posters", 9900, "pm_card_ok")]


@pytest.fixture
def manager(db):
    user = UserFactory(username="mo", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="managers")[0])
    return user


def now(wf) -> datetime:
    """The tester's time (a fake clock)."""
    return datetime.fromtimestamp(wf.clock.now(), tz=UTC)


@pytest.fixture
def invoice(wf):
    return issue_invoice("INV-7001", "Rivera Wholesale", "accounts@rivera.example",
                         now(wf) + DUE_IN, LINES)


def started(wf, invoice, operator):
    """The invoice's run, started by the back office: its lines are charged at once."""
    return wf.create("invoice-run", state={"invoice": invoice.number},
                     reference=invoice.number, start=True, user=operator)


def charge_requests() -> int:
    """How many charges the provider was asked for (a replay that charged again adds one)."""
    return ChargeRequest.objects.count()


def lines(invoice) -> list[tuple[int, str]]:
    return list(InvoiceLine.objects.filter(invoice=invoice).values_list("position", "status"))


def journal(run) -> list[str]:
    return list(JournalEntry.objects.filter(instance=run).order_by("position")
                .values_list("name", flat=True))


def test_each_line_is_charged_once_then_the_run_sleeps_until_the_invoice_is_due(
        wf, invoice, operator):
    run = started(wf, invoice, operator)

    run = wf.reload(run)
    assert (run.status, run.snap.waiting.kind) == ("running", "timer")
    assert run.snap.operation("charge-invoice").status == "suspended"
    assert charge_requests() == 3
    assert lines(invoice) == [(1, "charged"), (2, "declined"), (3, "charged")]
    # The sleep is journaled when it ends: until then, the steps that ran.
    assert journal(run) == ["load", "charge-line-1", "charge-line-2", "charge-line-3"]
    assert not WorkflowTask.objects.exists()  # nobody is asked before the due date


def test_at_the_due_date_the_managers_are_asked_about_the_declined_lines_only(
        wf, invoice, operator):
    run = started(wf, invoice, operator)

    wf.advance(DUE_IN.total_seconds() - 1)
    assert not WorkflowTask.objects.exists()
    wf.advance(1)

    task = WorkflowTask.objects.get(instance=run, status="open")
    assert (task.title, task.candidates) == ("Invoice INV-7001: 1 line declined",
                                             ["group:managers"])
    named = task.asked["form"]["properties"]["decision"]["description"]
    assert named == ("Declined: line 2, March: the Hamburg branch's T-shirts, 398.00 EUR to "
                     "pm_card_declined: Your card was declined.")
    assert charge_requests() == 3  # the code replayed after its sleep: no line charged again
    assert journal(run) == ["load", "charge-line-1", "charge-line-2", "charge-line-3", "sleep"]


def test_a_retry_charges_the_declined_lines_again_to_the_card_the_manager_gives(
        wf, invoice, operator, manager):
    run = started(wf, invoice, operator)
    wf.advance(DUE_IN.total_seconds())

    done = wf.reload(wf.complete(run, input={"decision": "retry",
                                             "payment_method": "pm_card_ok"}, user=manager))

    assert done.status == "completed"
    assert done.snap.operation("charge-invoice").result == {
        "invoice": "INV-7001", "charged": [1, 2, 3], "written_off": []}
    assert journal(run) == ["load", "charge-line-1", "charge-line-2", "charge-line-3", "sleep",
                            "Invoice INV-7001: 1 line declined", "charge-line-2-again"]
    assert charge_requests() == 4  # three lines, then line 2 once more
    line = InvoiceLine.objects.get(invoice=invoice, position=2)
    charge = Charge.objects.get(pk=line.charge)
    assert (line.status, charge.payment_method, charge.amount_cents, charge.reference) == (
        "charged", "pm_card_ok", 39800, "invoice:INV-7001")
    assert Charge.objects.filter(reference="invoice:INV-7001").count() == 4  # one declined


def test_a_write_off_closes_the_declined_lines_with_the_managers_note(
        wf, invoice, operator, manager):
    run = started(wf, invoice, operator)
    wf.advance(DUE_IN.total_seconds())

    done = wf.reload(wf.complete(run, input={"decision": "write-off",
                                             "note": "Goodwill: a damaged delivery"},
                                 user=manager))

    assert done.status == "completed"
    assert done.snap.operation("charge-invoice").result == {
        "invoice": "INV-7001", "charged": [1, 3], "written_off": [2]}
    assert lines(invoice) == [(1, "charged"), (2, "written-off"), (3, "charged")]
    assert InvoiceLine.objects.get(invoice=invoice, position=2).note == \
        "Goodwill: a damaged delivery"
    assert charge_requests() == 3


def test_a_write_off_needs_a_note_and_changes_nothing_without_one(
        wf, invoice, operator, manager):
    run = started(wf, invoice, operator)
    wf.advance(DUE_IN.total_seconds())

    with pytest.raises(WorkflowNotMoved) as refused:
        wf.complete(run, input={"decision": "write-off"}, user=manager)

    assert [(e.field, e.message) for e in refused.value.field_errors] == [
        ("note", "This field is required.")]
    assert WorkflowTask.objects.get(instance=run).status == "open"


def test_a_card_declined_again_asks_the_managers_again(wf, invoice, operator, manager):
    run = started(wf, invoice, operator)
    wf.advance(DUE_IN.total_seconds())

    wf.complete(run, input={"decision": "retry", "payment_method": "pm_card_insufficient_funds"},
                user=manager)

    again = WorkflowTask.objects.get(instance=run, status="open")
    assert "pm_card_insufficient_funds: Your card has insufficient funds" in \
        again.asked["form"]["properties"]["decision"]["description"]
    wf.complete(run, input={"decision": "retry", "payment_method": "pm_card_ok"}, user=manager)
    assert wf.reload(run).status == "completed"
    assert lines(invoice) == [(1, "charged"), (2, "charged"), (3, "charged")]
    assert charge_requests() == 5


def test_an_invoice_paid_in_full_asks_nobody(wf, operator):
    paid = issue_invoice("INV-7002", "Rivera Wholesale", "accounts@rivera.example",
                         now(wf) + DUE_IN, [LINES[0], LINES[2]])
    run = started(wf, paid, operator)

    wf.advance(DUE_IN.total_seconds())

    assert wf.reload(run).status == "completed"
    assert not WorkflowTask.objects.exists()
    assert lines(paid) == [(1, "charged"), (2, "charged")]
