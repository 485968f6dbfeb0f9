"""Real background processes for tests: a `manage.py qcluster`, whose workers sweep.

They run against the test database (committed data: use
``django_db(transaction=True)``), started in a process group of their own so a
test can ``kill -9`` the whole cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"


# Per vendor: the URL scheme, the default user and port of the test database's server.
SERVERS = {"postgresql": ("postgres", "postgres", 5432), "mysql": ("mysql", "root", 3306)}


def database_url() -> str:
    """The test database as a ``DATABASE_URL`` for the children (PostgreSQL or MariaDB)."""
    db = connection.settings_dict
    scheme, default_user, default_port = SERVERS[connection.vendor]
    user = db.get("USER") or default_user
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (f"{scheme}://{user}{password}@{db.get('HOST') or '127.0.0.1'}:"
            f"{db.get('PORT') or default_port}/{db['NAME']}")


def queue_name() -> str:
    """The broker queue of this test run (its database is unique to the run).

    Redis is shared by every run on the machine: one queue per run keeps two
    runs from taking each other's tasks. Give it to django-q2 in the test
    process with ``Conf.CLUSTER_NAME``; the children get ``DWF_Q_QUEUE``.
    """
    return f"dwf-{connection.settings_dict['NAME']}"


def redis_queue_key() -> str:
    return f"django_q:{queue_name()}:q"


def child_env(broker: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "DATABASE_URL": database_url(), "DWF_Q_BROKER": broker,
           "DWF_Q_QUEUE": queue_name(),
           "DWF_RUNNER": "django_workflows.runners.django_q.Runner",
           "DWF_HEARTBEAT_INTERVAL": "0.5", "DWF_HEARTBEAT_TIMEOUT": "3",
           "DWF_SWEEP_INTERVAL": "0.2", "PYTHONUNBUFFERED": "1"}
    env.pop("DWF_TEST_RUN_ID", None)  # the child's NAME is already the test database
    env.update(extra)
    return env


def wait_for(condition: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1,
             message: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


class Process:
    def __init__(self, name: str, args: list[str], env: dict[str, str]) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / f"{name}-{os.getpid()}-{time.time_ns()}.log"
        self._log = self.log_path.open("w")
        self.popen = subprocess.Popen([sys.executable, "-m", "django", *args], env=env,
                                      cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (the cluster's workers too)."""
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)

    def stop(self) -> None:
        if self.popen.poll() is None:
            # SIGTERM to the main process only: it stops its workers itself. Sent to the
            # whole group, the sentinel dies at once (SIG_DFL) and the main process hangs.
            with suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=15)
        self.kill(signal.SIGKILL)  # leftovers of the group
        if self.popen.poll() is None:
            self.popen.wait(timeout=5)
        self._log.close()


@contextmanager
def background(broker: str = "orm", *, workers: int = 2, sweeper: bool = True,
               **env: str) -> Iterator[Process]:
    """A running qcluster until the block ends; its workers sweep (``SWEEP_INTERVAL`` 0.2 s)
    unless ``sweeper`` is false."""
    if broker == "redis":
        import redis

        # Only this run's queue: other runs may share the Redis database.
        redis.Redis(host="127.0.0.1", port=6379,
                    db=int(env.get("DWF_REDIS_DB", "5"))).delete(redis_queue_key())
    cluster = Process(f"qcluster-{broker}", ["qcluster"],
                      child_env(broker, DWF_Q_WORKERS=str(workers),
                                DWF_SWEEP_IN_WORKERS="1" if sweeper else "0", **env))
    try:
        wait_for(lambda: "running" in cluster.log() or cluster.popen.poll() is not None,
                 timeout=30, message="the cluster to start")
        if cluster.popen.poll() is not None:
            raise AssertionError(f"qcluster exited:\n{cluster.log()}")
        yield cluster
    finally:
        cluster.stop()
