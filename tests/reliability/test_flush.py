"""The flush that ends every transactional test survives a deadlock with another session.

A worker of the shared cluster may still be in a transaction when a test ends
(tests/background). PostgreSQL's flush is one ``TRUNCATE`` that locks every table in
turn; when the server breaks a deadlock by aborting it, the rows of the test that just
ended stayed for the next one (CI, 2026-12-06: ``Database test_test_19380 couldn't be
flushed``, then ``test_kill_9_…[redis]`` saw the notes of the test before it).
"""

from __future__ import annotations

import re
import threading

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.core.management.sql import sql_flush
from django.db import connection, connections, transaction

from tests import dbutil
from tests.qcluster import wait_for
from tests.testapp.models import Note

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


# PostgreSQL looks for a deadlock once, when a session has waited this long for a lock: the
# flush, which waits first, looks after 3 s (time for the other session to start its read
# even on a slow machine), and the other session not before the test's deadlines.
FLUSH_DEADLOCK_TIMEOUT = "3s"
OTHER_DEADLOCK_TIMEOUT = "60s"


def deadlocks() -> int:
    """The deadlocks PostgreSQL has broken in this database so far."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_a_flush_aborted_to_break_a_deadlock_is_tried_again_and_empties_the_tables():
    Note.objects.create(text="left by the test before")
    (truncate,) = sql_flush(no_style(), connection)
    tables = re.findall(r'"([^"]+)"', truncate)  # in the order the flush locks them
    before = deadlocks()
    holding, outcome = threading.Event(), {}

    def another_session() -> None:
        """Hold the table the flush locks last; once the flush waits for it, read the
        one it locked first."""
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                # The flush looks for the deadlock first, so it is the one aborted.
                cursor.execute(f"SET LOCAL deadlock_timeout = '{OTHER_DEADLOCK_TIMEOUT}'")
                cursor.execute(f'LOCK TABLE "{tables[-1]}" IN ACCESS SHARE MODE')
                holding.set()
                assert dbutil.a_session_waits_for_a_lock(timeout=30), "the flush never waited"
                cursor.execute(f'SELECT count(*) FROM "{tables[0]}"')
                outcome["read"] = cursor.fetchone()[0]
        except Exception as error:
            outcome["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=another_session, daemon=True)
    thread.start()
    assert holding.wait(30), "the other session never locked its table"

    with connection.cursor() as cursor:
        cursor.execute(f"SET deadlock_timeout = '{FLUSH_DEADLOCK_TIMEOUT}'")
    try:
        call_command("flush", interactive=False, verbosity=0)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET deadlock_timeout")

    thread.join(30)
    assert outcome.keys() == {"read"}, outcome
    assert not Note.objects.exists()
    wait_for(lambda: deadlocks() == before + 1, timeout=10,
             message="PostgreSQL to count the deadlock it broke")
