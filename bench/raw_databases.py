"""The raw baseline of ``bench/transitions.py``, for each database server it runs on.

A transition without Django, through the server's own driver: ``SELECT * ...
FOR UPDATE`` one row, ``UPDATE`` it with its ~1 KB JSON state, ``INSERT`` one
event row, ``COMMIT``, in copies of our own tables (``bench_raw_instance``,
``bench_raw_event``). PostgreSQL through psycopg, MariaDB/MySQL through
mysqlclient (``MySQLdb``), each with the isolation level and character set the
service's connections use. Also here: the few plain statements the benchmark runs
around the cases (its database, the copies, the revision counts), each on a
short-lived connection of its own, so that no connection crosses a fork.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

INSTANCES = "django_workflows_workflowinstance"
EVENTS = "django_workflows_workflowevent"
RAW_INSTANCES = "bench_raw_instance"
RAW_EVENTS = "bench_raw_event"


class Server:
    """One database server, described by a Django ``DATABASES`` entry."""

    name = ""
    driver = ""

    def __init__(self, database: dict[str, Any]) -> None:
        self.database = database

    # Filled in by each server: ----------------------------------------------------------

    def connect(self, dbname: str | None = None) -> Any:
        """A DB-API connection to ``dbname``, or to the server's maintenance database."""
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def create_database(self, name: str) -> None:
        raise NotImplementedError

    def drop_database(self, name: str) -> None:
        raise NotImplementedError

    def copy_tables(self) -> None:
        """``bench_raw_instance`` and ``bench_raw_event``: our tables' columns and indexes."""
        raise NotImplementedError

    def transition(self, samples: list[float]) -> Callable[[str], int]:
        """A raw transition on a connection of its own (closed by its ``close``)."""
        raise NotImplementedError

    def key(self, instance_id: str) -> Any:
        """An instance id as the id column takes it."""
        return instance_id

    # The same everywhere: ------------------------------------------------------------------

    def run(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """One statement in the benchmark's database, committed; its rows."""
        conn = self.connect(self.database["NAME"])
        try:
            cursor = conn.cursor()
            cursor.execute(sql, list(params))
            rows = list(cursor.fetchall()) if cursor.description else []
            conn.commit()
            return rows
        finally:
            conn.close()

    def drop_copies(self) -> None:
        self.run(f"DROP TABLE IF EXISTS {RAW_EVENTS}")
        self.run(f"DROP TABLE IF EXISTS {RAW_INSTANCES}")

    def copy_instances(self, ids: list[str]) -> None:
        """The rows of ``ids`` copied, same ids, into the raw table."""
        self.run(f"INSERT INTO {RAW_INSTANCES} SELECT * FROM {INSTANCES} "
                 f"WHERE id IN ({', '.join(['%s'] * len(ids))})", map(self.key, ids))

    def revisions(self, table: str) -> int:
        """Revisions written so far to the rows of ``table`` (for a sanity check)."""
        return int(self.run(f"SELECT coalesce(sum(revision), 0) FROM {table}")[0][0])

    def steps(self, table: str, ids: list[str]) -> dict[str, str]:
        """The current step of each of ``ids`` in ``table``."""
        rows = self.run(f"SELECT id, current_step FROM {table} "
                        f"WHERE id IN ({', '.join(['%s'] * len(ids))})", map(self.key, ids))
        return {str(uuid.UUID(str(key))): step for key, step in rows}


class Postgres(Server):
    name = "PostgreSQL"
    driver = "psycopg"

    def connect(self, dbname: str | None = None) -> Any:
        import psycopg

        db = self.database
        return psycopg.connect(psycopg.conninfo.make_conninfo(
            host=db["HOST"], port=db["PORT"], user=db["USER"], password=db["PASSWORD"] or None,
            dbname=dbname or "postgres"), autocommit=dbname is None)

    def version(self) -> str:
        import psycopg

        with self.connect(self.database["NAME"]) as conn:
            number = conn.info.server_version
        return f"{self.name} {number // 10000}.{number % 10000}, psycopg {psycopg.__version__}"

    def create_database(self, name: str) -> None:
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')

    def drop_database(self, name: str) -> None:
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def copy_tables(self) -> None:
        self.drop_copies()
        self.run(f"CREATE TABLE {RAW_INSTANCES} (LIKE {INSTANCES} INCLUDING ALL)")
        self.run(f"CREATE TABLE {RAW_EVENTS} (LIKE {EVENTS} INCLUDING ALL)")
        # Django's foreign keys on PostgreSQL are deferred to the commit, as this one.
        self.run(f"ALTER TABLE {RAW_EVENTS} ADD FOREIGN KEY (instance_id) "
                 f"REFERENCES {RAW_INSTANCES} (id) DEFERRABLE INITIALLY DEFERRED")

    def transition(self, samples: list[float]) -> Callable[[str], int]:
        return PostgresTransition(self.connect(self.database["NAME"]), samples)


class Mysql(Server):
    """MariaDB or MySQL (InnoDB), as Django's ``mysql`` backend talks to them."""

    name = "MariaDB/MySQL"
    driver = "mysqlclient"

    def __init__(self, database: dict[str, Any]) -> None:
        super().__init__(database)
        self.native_uuid: bool | None = None  # MariaDB 10.7+: a uuid column, else char(32)

    def connect(self, dbname: str | None = None) -> Any:
        import MySQLdb

        db, options = self.database, self.database.get("OPTIONS", {})
        conn = MySQLdb.connect(host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306),
                               user=db["USER"] or "root", password=db["PASSWORD"] or "",
                               charset=options.get("charset", "utf8mb4"),
                               **({"database": dbname} if dbname else {}))
        isolation = options.get("isolation_level", "read committed")  # Django's default
        conn.cursor().execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {isolation.upper()}")
        conn.autocommit(dbname is None)
        return conn

    def version(self) -> str:
        import MySQLdb

        server = self.run("SELECT VERSION()")[0][0]
        self.name = "MariaDB" if "mariadb" in server.lower() else "MySQL"
        client = ".".join(str(part) for part in MySQLdb.version_info[:3])
        return f"{self.name} {server.split('-')[0]}, mysqlclient {client}"

    def create_database(self, name: str) -> None:
        conn = self.connect()
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
            conn.cursor().execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 "
                                  "COLLATE utf8mb4_unicode_ci")
        finally:
            conn.close()

    def drop_database(self, name: str) -> None:
        conn = self.connect()
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            conn.close()

    def copy_tables(self) -> None:
        self.drop_copies()
        self.run(f"CREATE TABLE {RAW_INSTANCES} LIKE {INSTANCES}")
        self.run(f"CREATE TABLE {RAW_EVENTS} LIKE {EVENTS}")
        # InnoDB checks a foreign key at once (Django's too: InnoDB has no deferred ones).
        self.run(f"ALTER TABLE {RAW_EVENTS} ADD FOREIGN KEY (instance_id) "
                 f"REFERENCES {RAW_INSTANCES} (id)")

    def key(self, instance_id: str) -> Any:
        if self.native_uuid is None:
            self.native_uuid = self.run(
                "SELECT data_type FROM information_schema.columns WHERE table_schema = "
                "DATABASE() AND table_name = %s AND column_name = 'id'",
                [INSTANCES])[0][0].lower() == "uuid"
        return instance_id if self.native_uuid else uuid.UUID(instance_id).hex

    def transition(self, samples: list[float]) -> Callable[[str], int]:
        return MysqlTransition(self.connect(self.database["NAME"]), samples, self.key)


class PostgresTransition:
    """Raw psycopg: lock, update the ~1 KB state, insert one event, commit."""

    def __init__(self, conn: Any, samples: list[float]) -> None:
        self.conn = conn
        self.samples = samples
        cur = self.conn.execute(f"SELECT * FROM {RAW_INSTANCES} LIMIT 0")
        names = [c.name for c in cur.description]
        self.at = {n: names.index(n) for n in ("state", "current_step", "revision",
                                                "last_event")}
        self.conn.rollback()

    def __call__(self, instance_id: str) -> int:
        from psycopg.types.json import Jsonb

        cur = self.conn.cursor()
        cur.execute(f"SELECT * FROM {RAW_INSTANCES} WHERE id = %s FOR UPDATE", (instance_id,))
        row = cur.fetchone()
        locked = time.perf_counter()
        state = row[self.at["state"]]
        state["counter"] = state.get("counter", 0) + 1
        step = int(row[self.at["current_step"]][1:]) + 1
        revision, sequence = row[self.at["revision"]] + 1, row[self.at["last_event"]] + 1
        cur.execute(f"UPDATE {RAW_INSTANCES} SET state = %s, current_step = %s, "
                    "revision = %s, last_event = %s, updated_at = now() WHERE id = %s",
                    (Jsonb(state), f"s{step}", revision, sequence, instance_id))
        cur.execute(f"INSERT INTO {RAW_EVENTS} (instance_id, sequence, type, step, revision, "
                    "data, created_at) VALUES (%s, %s, 'step-enter', %s, %s, %s, now())",
                    (instance_id, sequence, f"s{step}", revision, Jsonb({})))
        self.conn.commit()
        self.samples.append(time.perf_counter() - locked)
        return step

    def close(self) -> None:
        self.conn.close()


class MysqlTransition:
    """Raw mysqlclient: the same four statements; the JSON state is text, as Django sends it."""

    def __init__(self, conn: Any, samples: list[float], key: Callable[[str], Any]) -> None:
        self.conn = conn
        self.samples = samples
        self.key = key
        cur = self.conn.cursor()
        cur.execute(f"SELECT * FROM {RAW_INSTANCES} LIMIT 0")
        names = [c[0] for c in cur.description]
        self.at = {n: names.index(n) for n in ("state", "current_step", "revision",
                                                "last_event")}
        self.conn.rollback()

    def __call__(self, instance_id: str) -> int:
        key = self.key(instance_id)
        cur = self.conn.cursor()
        cur.execute(f"SELECT * FROM {RAW_INSTANCES} WHERE id = %s FOR UPDATE", (key,))
        row = cur.fetchone()
        locked = time.perf_counter()
        state = json.loads(row[self.at["state"]])
        state["counter"] = state.get("counter", 0) + 1
        step = int(row[self.at["current_step"]][1:]) + 1
        revision, sequence = row[self.at["revision"]] + 1, row[self.at["last_event"]] + 1
        cur.execute(f"UPDATE {RAW_INSTANCES} SET state = %s, current_step = %s, "
                    "revision = %s, last_event = %s, updated_at = NOW(6) WHERE id = %s",
                    (json.dumps(state), f"s{step}", revision, sequence, key))
        cur.execute(f"INSERT INTO {RAW_EVENTS} (instance_id, sequence, type, step, revision, "
                    "data, created_at) VALUES (%s, %s, 'step-enter', %s, %s, '{}', NOW(6))",
                    (key, sequence, f"s{step}", revision))
        self.conn.commit()
        self.samples.append(time.perf_counter() - locked)
        return step

    def close(self) -> None:
        self.conn.close()


def server_for(database: dict[str, Any]) -> Server:
    """The server of a Django ``DATABASES`` entry: PostgreSQL or MariaDB/MySQL."""
    engine = database["ENGINE"]
    if engine.endswith(".postgresql"):
        return Postgres(database)
    if engine.endswith(".mysql"):
        return Mysql(database)
    raise SystemExit(f"bench/transitions.py runs on PostgreSQL or MariaDB/MySQL, not {engine}")
