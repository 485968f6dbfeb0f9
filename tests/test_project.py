"""The project itself: settings, system checks and migrations are in order."""

from __future__ import annotations

import pytest
from django.core.management import call_command


# Django 6.1's checks read every database's features when no database is named.
@pytest.mark.django_db
def test_system_checks_pass():
    call_command("check")


@pytest.mark.django_db
def test_migrations_are_up_to_date():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
