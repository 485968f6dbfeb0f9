"""The shop's own rows: what the example workflows create, reserve, charge and ship.

Each row names the workflow instance that made it (``order`` / ``onboarding`` /
``expense``: the instance's id), so that running a step twice finds the row it
made the first time instead of making a second one.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Customer(models.Model):
    """A customer, created when an onboarding is confirmed; their email address is
    confirmed when they open the link the onboarding emails them."""

    onboarding = models.CharField(max_length=36, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=100)
    email = models.EmailField()
    plan = models.CharField(max_length=20)
    created_at = models.DateTimeField(auto_now_add=True)
    email_confirmed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


class Charge(models.Model):
    """A charge at the (fake) payment provider. One per idempotency key, ever.

    ``pending``: the bank confirms it at ``settles_at``; ``requires_action``: the bank waits
    for the customer, who never comes (``pm_card_unconfirmed``); ``cancelled``: the shop
    cancelled it before the bank confirmed it, and no money moved.
    """

    PENDING, SUCCEEDED, DECLINED = "pending", "succeeded", "declined"
    REQUIRES_ACTION, CANCELLED = "requires_action", "cancelled"
    STATUSES = [(PENDING, "Pending"), (REQUIRES_ACTION, "Waiting for the customer's bank"),
                (SUCCEEDED, "Succeeded"), (DECLINED, "Declined"), (CANCELLED, "Cancelled")]

    id = models.CharField(max_length=40, primary_key=True)
    idempotency_key = models.CharField(max_length=200, unique=True)
    reference = models.CharField(max_length=100, db_index=True)
    amount_cents = models.PositiveIntegerField()
    currency = models.CharField(max_length=3)
    payment_method = models.CharField(max_length=60)
    status = models.CharField(max_length=20, choices=STATUSES, default=PENDING)
    decline_reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    settles_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.id} {self.amount_cents / 100:.2f} {self.currency} ({self.status})"


class ChargeRequest(models.Model):
    """A charge request as the (fake) payment provider saw it: it allows a merchant at most
    ``payments.CONCURRENT_CHARGES`` requests in flight (``finished_at`` None) at once, and
    refuses the next. ``concurrent`` is how many were in flight when it came, itself
    included: the busiest moment of a merchant is the largest."""

    merchant = models.CharField(max_length=60)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    concurrent = models.PositiveIntegerField(default=1)
    refused = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["merchant", "started_at"],
                                name="shop_charge_request_merchant")]

    def __str__(self) -> str:
        return f"{self.merchant}: {self.concurrent} in flight at {self.started_at:%H:%M:%S}"


class Payment(models.Model):
    """The shop's record of an order's charge at the provider (the newest, when a card was
    declined first): the provider's webhook names the charge, the order waits for it."""

    order = models.CharField(max_length=36, unique=True)
    charge = models.CharField(max_length=40)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.charge} for {self.order}"


class Refund(models.Model):
    """A refund of a charge at the (fake) payment provider."""

    id = models.CharField(max_length=40, primary_key=True)
    idempotency_key = models.CharField(max_length=200, unique=True)
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="refunds")
    amount_cents = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.id} of {self.charge_id}"


class StockItem(models.Model):
    sku = models.CharField(max_length=40, primary_key=True)
    name = models.CharField(max_length=100)
    price_cents = models.PositiveIntegerField()
    on_hand = models.PositiveIntegerField(default=0)
    reserved = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.sku} ({self.available} available)"

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved


class StockReservation(models.Model):
    order = models.CharField(max_length=36)
    item = models.ForeignKey(StockItem, on_delete=models.PROTECT, related_name="reservations")
    quantity = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["order", "item"],
                                               name="shop_one_reservation_per_order_item")]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.item_id} for {self.order}"


class CourierBooking(models.Model):
    BOOKED, CANCELLED = "booked", "cancelled"

    order = models.CharField(max_length=36, unique=True)
    courier = models.CharField(max_length=60)
    country = models.CharField(max_length=2)
    status = models.CharField(max_length=20, default=BOOKED,
                              choices=[(BOOKED, "Booked"), (CANCELLED, "Cancelled")])
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.courier} for {self.order} ({self.status})"


class Shipment(models.Model):
    SHIPPED, VOIDED = "shipped", "voided"

    order = models.CharField(max_length=36, unique=True)
    tracking_number = models.CharField(max_length=40)
    parcels = models.PositiveIntegerField()
    status = models.CharField(max_length=20, default=SHIPPED,
                              choices=[(SHIPPED, "Shipped"), (VOIDED, "Voided")])
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.tracking_number} ({self.status})"


class Reimbursement(models.Model):
    """Money paid back to an employee for an approved expense."""

    expense = models.CharField(max_length=36, unique=True)
    employee = models.CharField(max_length=150)
    amount_cents = models.PositiveIntegerField()
    currency = models.CharField(max_length=3)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.amount_cents / 100:.2f} {self.currency} to {self.employee}"


class SentEmail(models.Model):
    """An email the shop sent, kept by the demo's mailbox (``mailbox.py``): the tour opens
    the links in them from the admin."""

    to = models.TextField()
    subject = models.CharField(max_length=300)
    body = models.TextField()
    sent_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.subject} (to {self.to})"


class StockReport(models.Model):
    """The nightly stock report: what each article has on hand, reserved and available."""

    run = models.CharField(max_length=36, unique=True)  # the stock-report instance
    date = models.DateField()
    lines = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Stock report of {self.date}"


class ClaimCounter(models.Model):
    """The last expense claim number given in a year: claims are E-<year>-0001, -0002, …
    (``claim_references.py``). Its row is locked while a claim is numbered."""

    year = models.PositiveSmallIntegerField(primary_key=True)
    last = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.year}: {self.last} claims"


class Invoice(models.Model):
    """A business customer's invoice: its lines are charged one by one by an invoice run
    (``invoices.py``), and what the bank declined is decided by a manager once it is due."""

    number = models.CharField(max_length=40, unique=True)
    customer = models.CharField(max_length=100)
    email = models.EmailField()
    currency = models.CharField(max_length=3, default="EUR")
    issued_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.number} ({self.customer})"


class InvoiceLine(models.Model):
    """One line of an invoice, charged on its own to the card it names (the card of the
    customer's branch that ordered it); the invoice run writes its outcome here."""

    OPEN, CHARGED, DECLINED, WRITTEN_OFF = "open", "charged", "declined", "written-off"
    STATUSES = [(OPEN, "Not charged yet"), (CHARGED, "Charged"), (DECLINED, "Declined"),
                (WRITTEN_OFF, "Written off")]

    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveSmallIntegerField()
    description = models.CharField(max_length=200)
    amount_cents = models.PositiveIntegerField()
    payment_method = models.CharField(max_length=60)
    status = models.CharField(max_length=20, choices=STATUSES, default=OPEN)
    charge = models.CharField(max_length=40, blank=True, default="")  # the provider's id
    note = models.CharField(max_length=500, blank=True, default="")  # why declined, written off

    class Meta:
        ordering = ["invoice", "position"]
        constraints = [models.UniqueConstraint(fields=["invoice", "position"],
                                               name="shop_one_line_per_invoice_position")]

    def __str__(self) -> str:
        return f"{self.invoice.number} line {self.position}: {self.description}"
