"""The shop's rows in the admin: what the workflows charged, refunded, reserved and shipped."""

from __future__ import annotations

from django.contrib import admin

from .models import (
    Charge,
    CourierBooking,
    Customer,
    Refund,
    Reimbursement,
    Shipment,
    StockItem,
    StockReservation,
)


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
    list_display = ["name", "email", "plan", "user", "created_at"]


@admin.register(Reimbursement)
class ReimbursementAdmin(ReadOnlyAdmin):
    list_display = ["expense", "employee", "amount_cents", "currency", "created_at"]
