"""A customer confirms their email address by opening a signed link.

The onboarding's last step (``email``) emails the customer a link when it is entered, and
waits for the signal ``email-confirmed``. The link carries the onboarding's id and the
address, signed with the site's ``SECRET_KEY`` (``django.core.signing``, with the time it
was made): nobody can make one for another address or another onboarding, and it works
for ``SHOP_TIMES["EMAIL_LINK"]`` seconds, as long as the onboarding waits for it.

Opening the link shows a page with a button (:func:`example_project.shop.views.confirm_email`);
the button (a POST: a mail scanner that fetches the link confirms nothing) sends the
signal as trusted code, since the signed link is the proof. The link's own hash is the
message id: a second click changes nothing.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from django_workflows import HookContext, services
from django_workflows.services import SignalSent

from . import times
from .models import Customer

SALT = "example_project.shop.email-confirmation"
LINK_PATH = "/email/confirm/{token}/"  # shop/urls.py mounts the page there

# The payload of the signal email-confirmed: the address the link was made for.
EMAIL_CONFIRMED = {
    "type": "object", "required": ["email"], "additionalProperties": False,
    "properties": {"email": {"type": "string", "maxLength": 254}},
}


def site_url() -> str:
    """Where the site answers, for links in emails (``SHOP_SITE_URL``)."""
    return str(getattr(settings, "SHOP_SITE_URL", "http://127.0.0.1:8000")).rstrip("/")


def make_link(onboarding_id: str, email: str) -> str:
    token = signing.dumps({"onboarding": onboarding_id, "email": email}, salt=SALT,
                          compress=True)
    return site_url() + LINK_PATH.format(token=token)


def read_link(token: str) -> dict[str, str]:
    """What a link's token says. Raises ``signing.SignatureExpired`` for a link older than
    ``SHOP_TIMES["EMAIL_LINK"]``, ``signing.BadSignature`` for one this site did not make."""
    value = signing.loads(token, salt=SALT,
                          max_age=timedelta(seconds=times.seconds("EMAIL_LINK")))
    if not (isinstance(value, dict) and isinstance(value.get("onboarding"), str)
            and isinstance(value.get("email"), str)):
        raise signing.BadSignature("The link does not name an onboarding and an address")
    return value


def confirm(token: str, link: dict[str, str]) -> SignalSent:
    """Send ``email-confirmed`` to the onboarding the link names; raises what
    ``services.signal`` raises (the view says each in words)."""
    message_id = "email-link:" + hashlib.sha256(token.encode()).hexdigest()[:40]
    return services.signal("onboarding", "email-confirmed", {"email": link["email"]},
                           instance=link["onboarding"], message_id=message_id)


def is_confirmed(link: dict[str, str]) -> bool:
    return Customer.objects.filter(onboarding=link["onboarding"], email=link["email"],
                                   email_confirmed_at__isnull=False).exists()


# -- the onboarding's hooks -----------------------------------------------------------------


def send_link(ctx: HookContext) -> None:
    """The ``email`` step's ``enter``: the link goes out once the step's entry is committed
    (and again when the step is entered again)."""
    email, name = ctx.state["email"], ctx.state["name"]
    body = (f"Hello {name},\n\nopen this link to confirm your email address:\n\n"
            f"{make_link(ctx.instance_id, email)}\n\n"
            f"It works for {times.seconds('EMAIL_LINK') / 3600:g} hours.\n")
    transaction.on_commit(partial(send_mail, "Confirm your email address", body,
                                  "shop@example.com", [email]), robust=True)


def mark_confirmed(ctx: HookContext) -> None:
    """The ``email`` step's ``leave``: the customer's address is confirmed, if the link was
    opened (not when the wait timed out) and named the address they have."""
    confirmation: Any = ctx.state.get("email_confirmation")
    if confirmation:
        Customer.objects.filter(onboarding=ctx.instance_id, email=confirmation["email"]
                                ).update(email_confirmed_at=timezone.now())
