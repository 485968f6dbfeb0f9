"""``manage.py workflows_demo_data``: demo users, stock, and workflow instances in every status.

Run it as often as you like: users are created once, with their demo passwords
(printed each time, never set again: a restart logs nobody out), instances only
when the demo users own none yet.

Most instances are moved to where they stand here and now, with their
background work run in this process (the payment provider's webhooks handed to
the shop's view in this process too). Some are left to the workers on purpose,
so the demo shows live work: an order whose bank is slow (it waits for the
provider's webhook for ``SLOW_LATENCY`` seconds, five minutes in the demo, while
the bank's side shows its progress), a failed order being rolled back, and the
reminder of the order whose card was declined (its timer fires a minute after).
One onboarding waits for its email confirmation link, which the demo's mailbox
keeps (the admin's *Shop > Sent emails*). Two invoice runs (durable code,
:mod:`example_project.shop.invoices`): INV-1001, due yesterday, asks the managers about
its declined line; INV-1002 is due ``SHOP_TIMES["INVOICE_DUE"]`` after the data is made
(a minute in the demo): the workers charge its lines, then its run sleeps until then and
asks too. The home page starts the tour's live cases again
(:mod:`example_project.shop.tour`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.test import override_settings
from django.utils import timezone

from django_workflows import services
from django_workflows.conf import IMMEDIATE_RUNNER, workflow_settings
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import WorkflowInstance
from example_project.shop import times
from example_project.shop.invoices import issue_invoice, start_invoice_run
from example_project.shop.models import StockItem
from example_project.shop.tour import expense, order, slow_order

# username, password, operator (staff, in the back-office groups)
BACK_OFFICE_GROUPS = ("operators", "managers")
USERS = [("operator", "operator-demo", True), ("alice", "alice-demo", False),
         ("bob", "bob-demo", False)]
STOCK = [("MUG", "Mug", 1290), ("TEE", "T-shirt", 1990), ("CAP", "Cap", 1490),
         ("POSTER", "Poster", 990)]
# INV-1001's lines, each charged to the card of the café that ordered it: one is declined.
INVOICE_LINES = [("March: the Elm Street café's mugs", 25800, "pm_card_ok"),
                 ("March: the Station café's T-shirts", 39800, "pm_card_declined"),
                 ("March: the Park café's posters", 9900, "pm_card_ok")]
STATUSES = ["idle", "running", "blocked", "failed", "rolling-back", "cancelled", "completed"]


@contextmanager
def work_runs_here() -> Iterator[None]:
    """Run background work at once, in this process, with a provider that never fails and
    hands its webhooks to the shop's view in this process.

    The emails this work sends are kept in memory, not printed.
    """
    locmem = "django.core.mail.backends.locmem.EmailBackend"
    # Django 6.1's MAILERS when the site has it; EMAIL_BACKEND is deprecated there.
    in_memory = ({"MAILERS": {alias: {"BACKEND": locmem} for alias in settings.MAILERS}}
                 if hasattr(settings, "MAILERS") else {"EMAIL_BACKEND": locmem})
    with override_settings(
            **in_memory,
            DJANGO_WORKFLOWS={**workflow_settings.user_settings, "RUNNER": IMMEDIATE_RUNNER},
            SHOP_PAYMENTS={**getattr(settings, "SHOP_PAYMENTS", {}), "FAILURE_RATE": 0,
                           "LOST_RESPONSE_RATE": 0, "LATENCY": 0, "WEBHOOK_URL": None}):
        yield


def refused(call: Any, *args: Any, **options: Any) -> None:
    """A command expected to be refused by validation (it stores the errors: blocked)."""
    try:
        call(*args, **options)
    except WorkflowNotMoved as refusal:
        if refusal.code != "validation_failed":
            raise
    else:
        raise AssertionError(f"{call.__name__} was expected to be refused")


class Command(BaseCommand):
    help = ("Create the example's demo users (an operator and two customers) and workflow "
            "instances in every status. Safe to run again.")

    def handle(self, *args: Any, **options: Any) -> None:
        users = self.ensure_users()
        for sku, name, price in STOCK:
            StockItem.objects.get_or_create(sku=sku, defaults={
                "name": name, "price_cents": price, "on_hand": 100})
        existing = WorkflowInstance.objects.filter(owner__in=users.values(), parent=None)
        if existing.exists():
            self.stdout.write(f"The demo users own {existing.count()} workflow instances "
                              "already; none were created.")
        else:
            with work_runs_here():
                self.onboardings(**users)
                self.orders(**users)
                self.expenses(**users)
                self.invoice_asking_the_managers(**users)
            self.waiting_for_an_email_link(**users)
            self.live_work(**users)
            self.stdout.write("Created demo workflow instances:")
        self.summary(users)

    def ensure_users(self) -> dict[str, Any]:
        """The demo users; a password is set when its user is made, and kept after that
        (a restart neither resets it nor logs anyone out)."""
        User = get_user_model()
        users = {}
        back_office = self.back_office_groups()
        self.stdout.write("Demo users (log in at /accounts/login/; the operator also at "
                          "/admin/):")
        for username, password, operator in USERS:
            user, created = User.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.com"})
            if created:
                user.set_password(password)
            user.is_staff, user.is_superuser = operator, False
            user.save()
            if operator:
                user.groups.add(*back_office)
            users[username] = user
            role = (f"operator (admin; groups {', '.join(g.name for g in back_office)})"
                    if operator else "customer")
            self.stdout.write(f"  {username:<10} password: {password:<15} {role}")
        return users

    def back_office_groups(self) -> list[Any]:
        """``operators`` review identity documents, ``managers`` decide expense claims;
        both may look after every workflow instance and the shop in the admin."""
        from django.contrib.auth.models import Group, Permission

        permissions = Permission.objects.filter(
            content_type__app_label__in=["django_workflows", "shop"])
        groups = []
        for name in BACK_OFFICE_GROUPS:
            group, _ = Group.objects.get_or_create(name=name)
            group.permissions.add(*permissions)
            groups.append(group)
        return groups

    # -- instances -----------------------------------------------------------------------

    def onboardings(self, operator: Any, alice: Any, bob: Any) -> None:
        # Completed: bob chose Pro, passed the identity check and opened his account.
        done = services.create("onboarding", user=bob, start=True)
        self.walk_onboarding(done, bob, plan="pro")
        self.decide_identity(done, operator, "approved")
        self.open_account(done, bob)
        # He opened the link the onboarding emailed him (as trusted code: the link's view).
        services.signal("onboarding", "email-confirmed", {"email": "bob@example.com"},
                        instance=done)
        # Running: alice's document waits for an operator's review.
        waiting = services.create("onboarding", user=alice, start=True)
        self.walk_onboarding(waiting, alice, plan=None)
        # Blocked: bob's second try has an email address that is not one.
        blocked = services.create("onboarding", user=bob, start=True)
        services.update_state(blocked, {"name": "Bob", "email": "bob-at-example",
                                        "invite_code": "", "plan": None,
                                        "accept_terms": False}, user=bob)
        refused(services.next, blocked, user=bob)
        # Failed: the operator rejected alice's first document.
        rejected = services.create("onboarding", user=alice, start=True)
        self.walk_onboarding(rejected, alice, plan="team")
        self.decide_identity(rejected, operator, "rejected", "The passport has expired")
        # Idle: created, not started yet.
        services.create("onboarding", user=alice)

    def walk_onboarding(self, instance: WorkflowInstance, user: Any, plan: str | None) -> None:
        """Profile and plan (skipped without one), then the document: the review waits."""
        name = user.get_username()
        services.update_state(instance, lambda state: {
            **state, "name": name.title(), "email": f"{name}@example.com"}, user=user)
        services.next(instance, user=user)
        if plan:
            services.update_state(instance, lambda state: {**state, "plan": plan}, user=user)
            services.next(instance, user=user)
        else:
            services.skip(instance, user=user)
        child = WorkflowInstance.objects.get(pk=WorkflowInstance.objects.get(
            pk=instance.pk).nested_id)
        services.update_state(child, lambda state: {
            **state, "document_type": "passport", "document_number": "C01X00T47"}, user=user)
        services.next(instance, user=user)

    def open_account(self, instance: WorkflowInstance, user: Any) -> None:
        """Accept the terms and open the account: the onboarding emails its link and waits."""
        services.update_state(instance, lambda state: {**state, "accept_terms": True},
                              user=user)
        services.next(instance, user=user)

    def waiting_for_an_email_link(self, operator: Any, alice: Any, bob: Any) -> None:
        """Running: alice opened her account and has yet to open the link emailed to her.
        Outside ``work_runs_here``: the email goes to the site's mailbox, for the tour."""
        waiting = services.create("onboarding", user=alice, start=True)
        self.walk_onboarding(waiting, alice, plan="pro")
        self.decide_identity(waiting, operator, "approved")
        self.open_account(waiting, alice)

    def decide_identity(self, instance: WorkflowInstance, operator: Any, decision: str,
                        reason: str = "") -> None:
        child = WorkflowInstance.objects.get(pk=WorkflowInstance.objects.get(
            pk=instance.pk).nested_id)
        services.complete(child, input={"decision": decision, "reason": reason},
                          user=operator)

    def orders(self, operator: Any, alice: Any, bob: Any) -> None:
        # Completed: paid, prepared, shipped, emailed.
        services.create("order-fulfilment", state=order("D-1001", alice), owner=alice,
                        user=operator, start=True, reference="D-1001")
        # Blocked: the card was declined; someone must give another one. Its reminder waits
        # (a timer: the workers fire it a minute later in the demo).
        services.create("order-fulfilment", owner=alice, user=operator, start=True,
                        reference="D-1002",
                        state=order("D-1002", alice, payment_method="pm_card_declined"))
        # Failed: no courier delivers to Iceland (the stock was reserved, the card charged).
        services.create("order-fulfilment", state=order("D-1003", bob, country="IS"),
                        owner=bob, user=operator, start=True, reference="D-1003")

    def expenses(self, operator: Any, alice: Any, bob: Any) -> None:
        claim = services.create  # an employee's claim, submitted with next
        # Idle: a draft.
        claim("expense-approval", state=expense(alice, 18.5, "Lunch with a customer"),
              user=alice)
        # Running: waiting for the manager's decision.
        waiting = claim("expense-approval", state=expense(bob, 240, "Train to Berlin"),
                        user=bob, start=True)
        services.next(waiting, user=bob)
        # Blocked: no receipt for 95 EUR.
        blocked = claim("expense-approval", user=bob, start=True,
                        state=expense(bob, 95, "Conference dinner", receipt=None))
        refused(services.next, blocked, user=bob)
        # Completed: approved and paid back; and one rejected.
        for employee, amount, what, decision, comment in [
                (alice, 64.9, "Taxi to the airport", "approved", ""),
                (bob, 1200, "A new office chair", "rejected", "Order chairs through IT")]:
            done = claim("expense-approval", state=expense(employee, amount, what),
                         user=employee, start=True)
            services.next(done, user=employee)
            services.complete(done, input={"decision": decision, "comment": comment},
                              user=operator)
        # Cancelled: withdrawn before the manager decided.
        withdrawn = claim("expense-approval", state=expense(alice, 30, "Parking"),
                          user=alice, start=True)
        services.next(withdrawn, user=alice)
        services.cancel(withdrawn, user=alice)

    def invoice_asking_the_managers(self, operator: Any, alice: Any, bob: Any) -> None:
        """Running: INV-1001 was due yesterday; its run charged its lines, one card was
        declined, and it asks the managers (the operator is one) what to do with it."""
        invoice = issue_invoice("INV-1001", "Springfield Cafés", "accounts@cafes.example",
                                timezone.now() - timedelta(days=1), INVOICE_LINES)
        start_invoice_run(invoice, user=operator)

    def live_work(self, operator: Any, alice: Any, bob: Any) -> None:
        """Work left to the workers: a slow bank, a rollback, an invoice run that sleeps."""
        if workflow_settings.RUNNER.__module__ == IMMEDIATE_RUNNER.rsplit(".", 1)[0]:
            self.stdout.write("No background workers (the immediate runner is configured): "
                              "the slow order, the rollback and the sleeping invoice run "
                              "are left out.")
            return
        # Due a minute from now in the demo: the run sleeps until then, then asks.
        invoice = issue_invoice(
            "INV-1002", "Shelbyville Bakeries", "accounts@bakeries.example",
            timezone.now() + timedelta(seconds=times.seconds("INVOICE_DUE")),
            [("March: the Main Street bakery's mugs", 15480, "pm_card_ok"),
             ("March: the Harbour bakery's aprons", 8950, "pm_card_insufficient_funds")])
        start_invoice_run(invoice, user=operator)
        slow_order(bob, operator)  # D-1004
        with work_runs_here():
            failed = services.create("order-fulfilment", owner=alice, user=operator,
                                     start=True, reference="D-1005",
                                     state=order("D-1005", alice, country="NO"))
        services.rollback(failed, user=operator)

    def summary(self, users: dict[str, Any]) -> None:
        rows = WorkflowInstance.objects.filter(owner__in=users.values(), parent=None)
        counts = Counter(rows.values_list("workflow", "status"))
        for workflow in sorted({w for w, _ in counts}):
            line = ", ".join(f"{counts[workflow, s]} {s}" for s in STATUSES
                             if counts[workflow, s])
            self.stdout.write(f"  {workflow:<18} {line}")
