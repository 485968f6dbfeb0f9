"""Who may act on the shop's back-office workflows: the fake bank, the payment reminders and
the stock report."""

from __future__ import annotations

from typing import Any


def staff_only(user: Any, instance: Any, action: str) -> bool:
    """The workers make these (trusted code, with no user); of people, only back-office
    staff see them or act on them. A customer who could start the fake bank would have it
    confirm their own charge."""
    return bool(getattr(user, "is_staff", False))
