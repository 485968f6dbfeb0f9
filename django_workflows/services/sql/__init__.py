"""The hot path's SQL, one class per database family, chosen once per connection.

- :class:`~.generic.Statements`: any database Django supports (SQLite here);
- :class:`~.postgresql.PostgreSQL`, and :class:`~.postgresql.PsycopgClientBinding` where
  psycopg 3 binds on the client (Django's default): several statements per round trip;
- :class:`~.mysql.MySQL` and :class:`~.mysql.MariaDB`.

Each holds its database's lock-wait policy and the attempts' SQL
(``statements().attempts``). ``orm.py`` holds the ORM internals they need.
"""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from .attempts import AttemptStatements, Statement
from .generic import EventRow, Statements
from .mysql import MariaDB, MySQL, is_mariadb
from .postgresql import PostgreSQL, PsycopgClientBinding

__all__ = ["AttemptStatements", "EventRow", "Statement", "Statements", "family_of",
           "statements"]

ATTRIBUTE = "_django_workflows_statements"  # on the connection: its statements


def family_of(connection: Any) -> type[Statements]:
    """The statements class for ``connection``'s database (asks MariaDB or MySQL which)."""
    if connection.vendor == "postgresql":
        return PsycopgClientBinding if binds_on_the_client(connection) else PostgreSQL
    if connection.vendor == "mysql":
        return MariaDB if is_mariadb(connection) else MySQL
    return Statements


def binds_on_the_client(connection: Any) -> bool:
    """psycopg 3 with client-side binding: several results from one execute."""
    from django.db.backends.postgresql.psycopg_any import is_psycopg3  # PostgreSQL only

    return is_psycopg3 and connection.settings_dict["OPTIONS"].get(
        "server_side_binding") is not True


def statements(alias: str = DEFAULT_DB_ALIAS) -> Statements:
    """The statements of this thread's connection ``alias``, built on its first use.

    They live on the connection object, and go with it (a weak-keyed cache would keep
    every thread's connection alive: what is built refers to it).
    """
    connection = connections[alias]
    built: Statements | None = getattr(connection, ATTRIBUTE, None)
    if built is None:
        built = family_of(connection)(connection)
        setattr(connection, ATTRIBUTE, built)
    return built
