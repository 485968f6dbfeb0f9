"""Expense claims are numbered as people quote them: ``E-2026-0001``, a sequence per year.

A new claim (an ``expense-approval`` instance) that its creator gave no reference gets
the next number of the current year as its ``reference``: the admin's instance list shows
it and its search finds it, and the API's ``?reference=`` and ``services.signal(...,
reference=)`` address the claim by it. The number is taken in the transaction that
inserts the claim, under the lock of its year's :class:`~.models.ClaimCounter` row: two
claims made at once get two numbers (tested with threads on PostgreSQL and MariaDB), and a
claim whose creation is rolled back gives its number back. The receiver is connected in
:class:`~example_project.shop.apps.ShopConfig`.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from django_workflows.models import WorkflowInstance

from .models import ClaimCounter

WORKFLOW = "expense-approval"


def claim_reference(year: int, number: int) -> str:
    return f"E-{year}-{number:04d}"


def next_claim_reference(year: int) -> str:
    """The year's next free claim number; call it inside the transaction that uses it."""
    with transaction.atomic():
        while True:
            number = _count(year)
            reference = claim_reference(year, number)
            # A number a client gave a claim of its own is skipped, not refused.
            if not WorkflowInstance.objects.filter(workflow=WORKFLOW,
                                                   reference=reference).exists():
                return reference


def _count(year: int) -> int:
    """Add one to the year's counter, making it at 1, in one statement: an upsert locks the
    row exclusively at once. (A read, then a write, deadlocks two claims on MariaDB, each
    holding the shared lock of a duplicate key that the other's write waits for.)"""
    table = connection.ops.quote_name(ClaimCounter._meta.db_table)
    year_column, last = (connection.ops.quote_name(name) for name in ("year", "last"))
    if connection.vendor == "mysql":
        upsert = (f"INSERT INTO {table} ({year_column}, {last}) VALUES (%s, 1) "
                  f"ON DUPLICATE KEY UPDATE {last} = {last} + 1")
    else:  # PostgreSQL and SQLite
        upsert = (f"INSERT INTO {table} ({year_column}, {last}) VALUES (%s, 1) "
                  f"ON CONFLICT ({year_column}) DO UPDATE SET {last} = {table}.{last} + 1")
    with connection.cursor() as cursor:
        cursor.execute(upsert, [year])
    return ClaimCounter.objects.values_list("last", flat=True).get(year=year)


def number_new_claim(sender: Any, instance: WorkflowInstance, raw: bool = False,
                     **kwargs: Any) -> None:
    """``pre_save`` of an instance row: a new claim without a reference gets its number."""
    if raw or not instance._state.adding or instance.workflow != WORKFLOW or \
            instance.reference:
        return
    instance.reference = next_claim_reference(timezone.localdate().year)
