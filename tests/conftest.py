from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from tests import dbutil
from tests.signal_workflows import signal_workflows  # noqa: F401 - a fixture for every test

# Per marker, why its tests are skipped in this run (None: they run).
_database_skips: dict[str, str] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check the database server once: fail the run under CI, skip its tests elsewhere."""
    if not dbutil.is_postgres():
        _database_skips["postgres"] = "needs PostgreSQL (DATABASE_URL is not a PostgreSQL URL)"
    if not dbutil.is_mysql():
        _database_skips["mysql"] = "needs MariaDB or MySQL (DATABASE_URL is not a mysql:// URL)"
    if not dbutil.has_real_locks():
        _database_skips["real_locks"] = ("needs real row locks: PostgreSQL or MariaDB/MySQL "
                                         "(DATABASE_URL is not one of them)")
    problem = dbutil.unreachable_reason()
    if problem is None:
        return
    name = dbutil.server_name()
    if os.environ.get("CI"):
        pytest.exit(f"DATABASE_URL points at {name}, which is not reachable: {problem}",
                    returncode=3)
    for marker in ("postgres", "mysql", "real_locks"):
        _database_skips.setdefault(marker, f"{name} is not reachable: {problem}")


@pytest.fixture(autouse=True, scope="session")
def _flush_retries_a_lost_deadlock() -> Iterator[None]:
    """Every test's flush survives a deadlock with a worker's late transaction
    (``dbutil.flush_retrying_lost_deadlocks``)."""
    from django.core.management.commands import flush

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flush.Command, "handle",
                      dbutil.flush_retrying_lost_deadlocks(flush.Command.handle))
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skips = {marker: pytest.mark.skip(reason=reason) for marker, reason in _database_skips.items()}
    if importlib.util.find_spec("rest_framework") is None:
        skips["needs_api"] = pytest.mark.skip(reason="needs the [api] extra")
    if importlib.util.find_spec("django_q") is None:
        skips["needs_q2"] = pytest.mark.skip(reason="needs the [q2] extra")
    if importlib.util.find_spec("django_tasks") is None:
        skips["needs_tasks"] = pytest.mark.skip(reason="needs the [tasks] extra")
    for item in items:
        for marker, skip in skips.items():
            if marker in item.keywords:
                item.add_marker(skip)
