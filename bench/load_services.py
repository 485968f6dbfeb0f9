"""The load harness's own services and processes: a private PostgreSQL, Redis, and
the site's processes, each in a process group of its own (``bench/load.py``)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent


# -- small helpers ---------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


class Process:
    """A child in a process group of its own, its output in a log file."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> None:
        self.name, self.args, self.env = name, args, env
        self.log_path = logs / f"{name}.log"
        self.restarts = 0
        self.popen: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        with self.log_path.open("ab") as out:
            self.popen = subprocess.Popen(self.args, env=self.env, cwd=ROOT, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 15.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)  # the main process stops its children
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)  # whatever is left of the group
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            found.append(int(stat.split("/")[2]))
    return found


# -- private services ----------------------------------------------------------------------


class Postgres:
    """A PostgreSQL cluster of our own: restarting it disturbs nobody else."""

    def __init__(self, workdir: Path) -> None:
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        pg_ctl = binaries[-1] if binaries else shutil.which("pg_ctl")
        if not pg_ctl:
            raise SystemExit("bench/load.py needs PostgreSQL's server binaries (initdb, pg_ctl)")
        self.bin = Path(pg_ctl).parent
        self.dir = workdir / "postgres"
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *args: str, timeout: float = 120) -> None:
        subprocess.run([*self.as_user, *args], check=True, timeout=timeout, cwd="/",
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def init(self) -> None:
        self.dir.mkdir(parents=True)
        if self.as_user:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U",
                  "postgres", "--no-sync", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                       f"unix_socket_directories = '{self.dir}'\nmax_connections = 200\n"
                       "shared_buffers = 128MB\nlog_min_messages = warning\n")
        self.start()

    def pg_ctl(self, *args: str) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.dir / "server.log"), "-w", "-t", "60", *args)

    def start(self) -> None:
        self.pg_ctl("start")

    def restart(self) -> None:
        self.pg_ctl("-m", "fast", "restart")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.pg_ctl("-m", "fast", "stop")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres", **options: Any) -> psycopg.Connection:
        return psycopg.connect(self.url(database), connect_timeout=5, **options)


class Redis:
    """A redis-server of our own, without persistence: a stop loses its queue."""

    def __init__(self, workdir: Path) -> None:
        if not shutil.which("redis-server"):
            raise SystemExit("bench/load.py needs redis-server for the Redis broker")
        self.port = free_port()
        self.logs = workdir
        self.process: Process | None = None

    def start(self) -> None:
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", str(self.logs)]
        self.process = Process("redis", args, dict(os.environ), self.logs)
        wait_until(self.ping, 15, "Redis to answer")

    def ping(self) -> bool:
        import redis

        return bool(redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping())

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=5)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@contextlib.contextmanager
def private_postgres(workdir: Path) -> Iterator[Postgres]:
    pg = Postgres(workdir)
    pg.init()
    try:
        yield pg
    finally:
        pg.stop()
