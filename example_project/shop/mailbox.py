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
    def write_message(self, message: Any) -> None:
        # The headers as Django builds them, then the body as written: a person opens its
        # links from the terminal, and Django 6.1 prints long lines quoted-printable (a
        # link cut in pieces, each ending in "=").
        headers = "".join(f"{name}: {value}\n" for name, value in message.message().items()
                          if name.lower() != "content-transfer-encoding")
        self.stream.write(f"{headers}\n{message.body}\n{'-' * 79}\n")

    def send_messages(self, email_messages: Sequence[Any]) -> int:
        sent = super().send_messages(email_messages)
        SentEmail.objects.bulk_create(
            SentEmail(to=", ".join(message.to), subject=message.subject[:300],
                      body=message.body) for message in email_messages)
        return sent
