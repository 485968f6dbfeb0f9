from __future__ import annotations

import importlib.util
import os

import pytest

from tests import dbutil

_postgres_skip_reason: str | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check PostgreSQL once: fail the run under CI, skip its tests elsewhere."""
    global _postgres_skip_reason
    if not dbutil.is_postgres():
        _postgres_skip_reason = "needs PostgreSQL (DATABASE_URL is not a PostgreSQL URL)"
        return
    problem = dbutil.postgres_unreachable_reason()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.exit(
            f"DATABASE_URL points at PostgreSQL, which is not reachable: {problem}",
            returncode=3,
        )
    _postgres_skip_reason = f"PostgreSQL is not reachable: {problem}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skips = {}
    if _postgres_skip_reason:
        skips["postgres"] = pytest.mark.skip(reason=_postgres_skip_reason)
    if importlib.util.find_spec("rest_framework") is None:
        skips["needs_api"] = pytest.mark.skip(reason="needs the [api] extra")
    if importlib.util.find_spec("django_q") is None:
        skips["needs_q2"] = pytest.mark.skip(reason="needs the [q2] extra")
    for item in items:
        for marker, skip in skips.items():
            if marker in item.keywords:
                item.add_marker(skip)
