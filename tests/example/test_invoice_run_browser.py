"""A manager decides an invoice run's question in the admin, in a real browser.

The invoice was due yesterday, so its run charged its lines, woke from its sleep at once and
asks the managers about the line the bank declined. The manager signs in, opens the task
from the inbox, reads which line was declined, chooses to charge it again to another card,
and the run, woken by the decision, charges that line and completes.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission
from django.utils import timezone

from django_workflows.models import WorkflowInstance, WorkflowTask
from example_project.shop.invoices import issue_invoice, start_invoice_run
from example_project.shop.models import ChargeRequest, InvoiceLine
from tests.factories import UserFactory

from .browser import off_the_browsers_thread, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.urls("tests.example.urls")]

PASSWORD = "correct horse battery staple"


@pytest.fixture
def asking(transactional_db):
    """The run of an invoice due yesterday: it asks the managers about its declined line."""
    operator = UserFactory(username="olga", is_staff=True)
    manager = UserFactory(username="mo", password=PASSWORD, is_staff=True)
    # As the demo's managers: they look after every instance (workflows_demo_data).
    managers = Group.objects.get_or_create(name="managers")[0]
    managers.permissions.add(*Permission.objects.filter(
        content_type__app_label__in=["django_workflows", "shop"]))
    manager.groups.add(managers)
    invoice = issue_invoice(
        "INV-8001", "Rivera Wholesale", "accounts@rivera.example",
        timezone.now() - timedelta(days=1),
        [("March: the Berlin branch's mugs", 25800, "pm_card_ok"),
         ("March: the Hamburg branch's T-shirts", 39800, "pm_card_declined")])
    run = off_the_browsers_thread(lambda: start_invoice_run(invoice, user=operator))
    assert WorkflowTask.objects.get(instance=run, status="open")
    return run


def test_a_manager_decides_the_declined_line_from_the_inbox_and_the_run_completes(
        browser, live_server, asking):
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", "mo")
    page.fill("#id_password", PASSWORD)
    page.click("[type=submit]")

    page.wait_for_selector("#dwf-inbox-count")
    assert page.text_content("#dwf-inbox-count") == "1"
    page.click("#dwf-inbox-link a.section")
    page.click("text=Invoice INV-8001: 1 line declined")
    page.wait_for_selector("#dwf-task-form")
    asked = page.text_content("#dwf-task-form")
    assert "line 2, March: the Hamburg branch's T-shirts, 398.00 EUR to pm_card_declined: " \
           "Your card was declined" in asked
    assert "Berlin" not in asked  # the line that was charged is not asked about
    assert page.input_value("[name=payment_method]") == "pm_card_ok"
    screenshot(page, "invoice-run-1-task")

    page.select_option("select[name=decision]", "retry")
    page.click("#dwf-complete")
    page.wait_for_selector("#dwf-task-decided")
    assert "mo" in page.text_content("#dwf-task-decided")

    page.click("#dwf-task-instance")
    page.wait_for_selector("#dwf-status.dwf-status-completed", timeout=15_000)
    screenshot(page, "invoice-run-2-completed")
    run = WorkflowInstance.objects.get(pk=asking.pk)
    assert run.snap.operation("charge-invoice").result == {
        "invoice": "INV-8001", "charged": [1, 2], "written_off": []}
    assert list(InvoiceLine.objects.filter(invoice__number="INV-8001")
                .values_list("status", flat=True)) == ["charged", "charged"]
    assert ChargeRequest.objects.count() == 3  # each line once, then the declined one again
