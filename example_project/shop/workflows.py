"""The example's workflows and schedules; every Workflow bound here, and every schedule in
SCHEDULES, is registered when Django starts."""

from __future__ import annotations

from django.conf import settings

from django_workflows import Schedule

from .bank import fake_bank
from .expenses import expense_approval
from .fulfilment import fulfilment
from .invoices import invoice_run
from .onboarding import identity_check, onboarding
from .reminders import payment_reminder
from .stock_report import report_state, stock_report


def nightly_stock_report() -> Schedule:
    """The stock report (stock_report.py), every night at 03:00 in Berlin: one run per
    night, whatever the number of workers. A night the site was down runs once when it is
    back (catch_up="latest"); a night whose run is still going is skipped (overlap="skip").
    The admin pauses and resumes it (Workflows > Schedules)."""
    return Schedule("nightly-stock-report", workflow="stock-report", cron="0 3 * * *",
                    timezone="Europe/Berlin", state=report_state, overlap="skip",
                    catch_up="latest")


# Where the site's settings ask for them (SHOP_SCHEDULES, on in example_project/settings.py).
# The test suite installs this app too, and a schedule registered for a whole test run
# would make instances in every test that sweeps: the example's tests register it
# themselves.
SCHEDULES = [nightly_stock_report()] if getattr(settings, "SHOP_SCHEDULES", False) else []

__all__ = ["SCHEDULES", "expense_approval", "fake_bank", "fulfilment", "identity_check",
           "invoice_run", "nightly_stock_report", "onboarding", "payment_reminder", "stock_report"]
