"""A webhook's secrets and signature: ``Webhook-Signature: t=<unix time>,v1=<hex>``, the
hex HMAC-SHA256 of ``"<t>.<raw body>"`` made with one of the secrets (several while
rotating)."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

Secrets = str | bytes | Sequence[str | bytes]


def from_setting(name: str) -> Callable[[], Secrets]:
    """The secret read from ``settings.<name>`` on each request: one secret or a list of
    them (several while rotating), kept out of the code."""

    def read() -> Secrets:
        value: Secrets | None = getattr(settings, name, None)
        if not value:
            raise ImproperlyConfigured(f"The webhook secret setting {name} is not set")
        return value

    read.__qualname__ = f"from_setting({name!r})"
    return read


def signature(body: bytes | str, secret: str | bytes, *, timestamp: int | None = None,
              scheme: str = "v1") -> str:
    """The signature header's value for ``body``: ``t=<timestamp>,v1=<hex>`` (now by
    default). For tests, and for anything that sends to such a webhook."""
    at = int(time.time()) if timestamp is None else timestamp
    return f"t={at},{scheme}={digest(as_bytes(secret), at, as_bytes(body))}"


def as_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def secrets_of(value: Any, name: str) -> list[bytes]:
    listed = [value] if isinstance(value, str | bytes) else list(value or ())
    if not listed or not all(isinstance(s, str | bytes) and s for s in listed):
        raise ImproperlyConfigured(f'Webhook "{name}" has no secret, or an empty one')
    return [as_bytes(s) for s in listed]


def digest(secret: bytes, timestamp: int, body: bytes) -> str:
    return hmac.new(secret, b"%d." % timestamp + body, hashlib.sha256).hexdigest()


def parse_header(header: str, scheme: str) -> tuple[int | None, list[str]]:
    """``t=<unix time>,v1=<hex>[,v1=<hex>...]``: the timestamp and the signatures."""
    timestamp, signatures = None, []
    for part in header.split(",")[:32]:
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isascii() and value.isdigit() and len(value) <= 12:
            timestamp = int(value)
        elif key == scheme and value and value.isascii():  # compare_digest takes ASCII text
            signatures.append(value)
    return timestamp, signatures
