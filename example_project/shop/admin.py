"""The shop's rows in the admin: what the workflows charged, refunded, reserved and shipped,
the invoices and their lines, the emails the demo's mailbox kept, and the nightly stock
reports."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join, linebreaks, urlize
from django.utils.safestring import SafeString, mark_safe

from django_workflows.models import WorkflowInstance

from .models import (
    Charge,
    ChargeRequest,
    CourierBooking,
    Customer,
    Invoice,
    InvoiceLine,
    Payment,
    Refund,
    Reimbursement,
    SentEmail,
    Shipment,
    StockItem,
    StockReport,
    StockReservation,
)
from .stock_report import LOW_STOCK


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the workflows write; people look at them, the workflows change them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Charge)
class ChargeAdmin(ReadOnlyAdmin):
    list_display = ["id", "reference", "amount_cents", "currency", "payment_method", "status",
                    "created_at"]
    list_filter = ["status", "payment_method"]
    search_fields = ["id", "reference", "idempotency_key"]


@admin.register(ChargeRequest)
class ChargeRequestAdmin(ReadOnlyAdmin):
    """What the provider counts: a merchant's requests in flight at once (5 at most)."""

    list_display = ["merchant", "started_at", "finished_at", "concurrent", "refused"]
    list_filter = ["refused", "merchant"]


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    list_display = ["order", "charge", "created_at"]
    search_fields = ["order", "charge"]


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdmin):
    list_display = ["id", "charge", "amount_cents", "created_at"]
    search_fields = ["id", "charge__id", "charge__reference"]


@admin.register(StockItem)
class StockItemAdmin(admin.ModelAdmin):
    list_display = ["sku", "name", "price_cents", "on_hand", "reserved"]


@admin.register(StockReservation)
class StockReservationAdmin(ReadOnlyAdmin):
    list_display = ["order", "item", "quantity"]


@admin.register(CourierBooking)
class CourierBookingAdmin(ReadOnlyAdmin):
    list_display = ["order", "courier", "country", "status", "created_at"]
    list_filter = ["status", "courier"]


@admin.register(Shipment)
class ShipmentAdmin(ReadOnlyAdmin):
    list_display = ["order", "tracking_number", "parcels", "status", "created_at"]


@admin.register(Customer)
class CustomerAdmin(ReadOnlyAdmin):
    list_display = ["name", "email", "email_confirmed_at", "plan", "user", "created_at"]


@admin.register(Reimbursement)
class ReimbursementAdmin(ReadOnlyAdmin):
    list_display = ["expense", "employee", "amount_cents", "currency", "created_at"]


@admin.register(SentEmail)
class SentEmailAdmin(ReadOnlyAdmin):
    """The demo's mailbox (mailbox.py): open an email to follow the links in it."""

    list_display = ["sent_at", "to", "subject"]
    search_fields = ["to", "subject"]
    fields = readonly_fields = ("sent_at", "to", "subject", "message")

    @admin.display(description="Message")
    def message(self, email: SentEmail) -> SafeString:
        # urlize escapes the text and makes its links clickable.
        return mark_safe(linebreaks(urlize(email.body, nofollow=True, autoescape=True),
                                   autoescape=False))


@admin.register(StockReport)
class StockReportAdmin(ReadOnlyAdmin):
    list_display = ["date", "articles", "running_low", "created_at"]
    fields = readonly_fields = ("date", "run", "created_at", "table")

    @admin.display(description="Articles")
    def articles(self, report: StockReport) -> int:
        return len(report.lines)

    @admin.display(description="Running low")
    def running_low(self, report: StockReport) -> str:
        return ", ".join(line["sku"] for line in report.lines
                         if line["available"] < LOW_STOCK) or "none"

    @admin.display(description="Stock")
    def table(self, report: StockReport) -> SafeString:
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                                "<td>{}</td></tr>",
                                ((line["sku"], line["name"], line["on_hand"], line["reserved"],
                                  line["available"]) for line in report.lines))
        return mark_safe("<table><thead><tr><th>SKU</th><th>Article</th><th>On hand</th>"
                         f"<th>Reserved</th><th>Available</th></tr></thead><tbody>{rows}"
                         "</tbody></table>")


class InvoiceLineInline(admin.TabularInline):
    model = InvoiceLine
    fields = readonly_fields = ("position", "description", "amount_cents", "payment_method",
                                "status", "charge", "note")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Invoice)
class InvoiceAdmin(ReadOnlyAdmin):
    """Invoices and what their run made of each line (invoices.py)."""

    list_display = ["number", "customer", "currency", "due_at", "lines_by_status", "run"]
    search_fields = ["number", "customer", "email"]
    fields = readonly_fields = ("number", "customer", "email", "currency", "issued_at",
                                "due_at", "run")
    inlines = [InvoiceLineInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("lines")

    @admin.display(description="Lines")
    def lines_by_status(self, invoice: Invoice) -> str:
        labels = dict(InvoiceLine.STATUSES)
        statuses = [line.status for line in invoice.lines.all()]
        return ", ".join(f"{statuses.count(s)} {labels[s].lower()}" for s in labels
                         if s in statuses)

    @admin.display(description="Invoice run")
    def run(self, invoice: Invoice) -> str:
        instance = WorkflowInstance.objects.filter(workflow="invoice-run",
                                                   reference=invoice.number).first()
        if instance is None:
            return "—"
        url = reverse("admin:django_workflows_workflowinstance_change", args=[instance.pk])
        return format_html('<a href="{}">{}</a>', url, instance.get_status_display())
