"""The demo's mailbox: an email backend that prints each email, as Django's console backend
does, and keeps a copy (:class:`~example_project.shop.models.SentEmail`) that the admin
lists under *Shop > Sent emails*, so that the tour can open the links in them: the email
confirmation link of an onboarding, say. A demo's, not a shop's: it sends nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.mail.backends.console import EmailBackend as ConsoleBackend

from .models import SentEmail


class EmailBackend(ConsoleBackend):
    def send_messages(self, email_messages: Sequence[Any]) -> int:
        sent = super().send_messages(email_messages)
        SentEmail.objects.bulk_create(
            SentEmail(to=", ".join(message.to), subject=message.subject[:300],
                      body=message.body) for message in email_messages)
        return sent
