"""Database facts for tests, usable without fixtures (in skip conditions, helpers)."""

from __future__ import annotations

from django.db import connection


def is_postgres() -> bool:
    """True when the default database is PostgreSQL."""
    return connection.vendor == "postgresql"


def is_sqlite() -> bool:
    """True when the default database is SQLite."""
    return connection.vendor == "sqlite"


def postgres_unreachable_reason() -> str | None:
    """Why the configured PostgreSQL server cannot be reached, or None when it answers.

    Connects with the configured database first and falls back to the ``postgres``
    maintenance database, as Django does when it creates the test database.
    """
    import psycopg

    settings = connection.settings_dict
    params = {
        "host": settings.get("HOST") or None,
        "port": settings.get("PORT") or None,
        "user": settings.get("USER") or None,
        "password": settings.get("PASSWORD") or None,
        "connect_timeout": 3,
    }
    first_error: Exception | None = None
    for dbname in (settings.get("NAME") or "postgres", "postgres"):
        try:
            psycopg.connect(dbname=dbname, **params).close()
        except psycopg.Error as error:
            first_error = first_error or error
        else:
            return None
    return f"{first_error}".strip() or type(first_error).__name__
