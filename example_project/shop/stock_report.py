"""The nightly stock report: a small workflow a schedule starts every night at 03:00.

The schedule (``nightly-stock-report``, declared in :mod:`.workflows`: ``cron="0 3 * * *"``, Berlin
time) makes one ``stock-report`` instance per night, whatever the number of workers; its
state is the night's date. Its one operation writes what each article has on hand,
reserved and available (a :class:`~example_project.shop.models.StockReport` row, one per
run) and emails it to the stock keeper, naming the articles that run low. The admin's
*Workflows > Schedules* page shows the schedule, its next run and its runs, and pauses and
resumes it; a report can be run by hand from *Workflow instances > Add*.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.mail import send_mail
from django.utils import timezone

from django_workflows import Operation, OperationContext, Step, Workflow

from .back_office import staff_only
from .models import StockItem, StockReport

LOW_STOCK = 10  # available units under which an article is named in the email
STOCK_KEEPER = "stock@example.com"


def report_state(due: datetime) -> dict[str, Any]:
    """A night's run: the date of its due time, in the schedule's time zone."""
    return {"date": f"{due:%Y-%m-%d}"}


def today() -> dict[str, Any]:
    return {"date": f"{timezone.localdate():%Y-%m-%d}"}


def write_report(ctx: OperationContext) -> dict[str, Any]:
    lines: list[dict[str, Any]] = [{"sku": item.sku, "name": item.name, "on_hand": item.on_hand,
                                    "reserved": item.reserved, "available": item.available}
                                   for item in StockItem.objects.order_by("sku")]
    report, _ = StockReport.objects.update_or_create(
        run=ctx.instance_id, defaults={"date": ctx.state["date"], "lines": lines})
    low = [line["sku"] for line in lines if line["available"] < LOW_STOCK]
    table = "\n".join(f"{line['sku']:<10} {line['on_hand']:>6} on hand {line['reserved']:>6} "
                      f"reserved {line['available']:>6} available" for line in lines)
    send_mail(f"Stock report of {ctx.state['date']}",
              f"{table or 'No articles.'}\n\nRunning low: {', '.join(low) or 'none'}.\n",
              "shop@example.com", [STOCK_KEEPER])
    ctx.log(f"{len(lines)} articles, {len(low)} running low; emailed {STOCK_KEEPER}")
    return {"report": report.pk, "articles": len(lines), "low": low}


stock_report = Workflow(
    id="stock-report", title="Stock report",
    permission=staff_only,
    initial=today,
    state_schema={"type": "object", "required": ["date"],
                  "properties": {"date": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\d$"}}},
    steps=[Step("report", title="Write the stock report", advance="auto",
                operations=[Operation("write-report", title="Count the stock and email it",
                                      run=write_report, retries=3, retry_delay=60)])],
)
