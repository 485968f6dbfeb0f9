"""Locking an instance's tree on PostgreSQL: the bounded wait costs no round trip of its own."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_workflows import services
from django_workflows.services.locking import lock_tree

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def lock_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        return cursor.fetchone()[0]


def test_locking_a_root_takes_one_round_trip_and_leaves_the_lock_timeout_as_it_was():
    instance = services.create("wizard", start=True)

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '7s'")
        with CaptureQueriesContext(connection) as queries:
            chain = lock_tree(instance.pk, timeout=2)
        assert lock_timeout() == "7s"

    assert [row.pk for row in chain] == [instance.pk]
    assert len(queries) == 1
    assert "set_config('lock_timeout', '2000ms', true)" in queries[0]["sql"]


def test_locking_a_child_locks_its_parent_first_and_leaves_the_lock_timeout_as_it_was():
    parent = services.create("parent", start=True)
    services.next(parent.pk)
    parent.refresh_from_db()

    with transaction.atomic():
        chain = lock_tree(parent.nested_id, timeout=2)
        assert lock_timeout() == "0"

    assert [str(row.pk) for row in chain] == [str(parent.pk), parent.nested_id]
