"""The attempt's row is written twice per operation (claimed, finished): every index on it
is written each time, so it carries only those that a query uses."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workflows.models import Attempt

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def indexes_on_token() -> list[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Attempt._meta.db_table)
    return sorted(name for name, found in constraints.items()
                  if (found["index"] or found["primary_key"]) and found["columns"] == ["token"])


def test_the_token_has_one_index_its_primary_key():
    # Django added a second one (varchar_pattern_ops, for LIKE 'prefix%'), which nothing used.
    assert indexes_on_token() == ["django_workflows_attempt_pkey"]


def test_the_migration_back_gives_the_second_index_again():
    from django.core.management import call_command

    call_command("migrate", "django_workflows", "0012", verbosity=0)
    try:
        assert len(indexes_on_token()) == 2
    finally:
        call_command("migrate", "django_workflows", verbosity=0)
    assert indexes_on_token() == ["django_workflows_attempt_pkey"]
