"""Async views that await the services' twins, served by uvicorn and driven over HTTP.

The server is a process of its own (``tests/asgi/app.py``) on the test database (its file on
SQLite, its server otherwise), so the rows this test reads are what the views committed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from django_workflows.models import WorkflowEvent, WorkflowInstance
from tests.factories import UserFactory
from tests.qcluster import ARTIFACTS, ROOT, wait_for
from tests.tasks_workers import database_url

pytestmark = pytest.mark.django_db(transaction=True)  # the server sees committed rows only

CSRF_TOKEN = "a" * 32  # a cookie's token, sent back in the header as a page's script would


@dataclass
class Served:
    base: str  # http://127.0.0.1:<port>
    process: subprocess.Popen[bytes]
    log_path: Any

    def post(self, path: str, data: dict[str, Any] | None = None, *, session: str = ""
             ) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            self.base + path, data=urllib.parse.urlencode(data or {}).encode(), method="POST",
            headers={"Cookie": f"{settings.SESSION_COOKIE_NAME}={session}; "
                               f"{settings.CSRF_COOKIE_NAME}={CSRF_TOKEN}",
                     "X-CSRFToken": CSRF_TOKEN})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")


def answers(base: str) -> bool:
    """Whether the server answers HTTP (any status: a 404 is an answer)."""
    try:
        urllib.request.urlopen(base + "/", timeout=2).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


@pytest.fixture
def served(transactional_db: None) -> Iterator[Served]:
    """uvicorn serving ``tests/asgi/urls.py`` on a free port of 127.0.0.1 (bound here and
    handed over, so no other process can take it in between), stopped with its group."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    base = f"http://127.0.0.1:{listening.getsockname()[1]}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.asgi.settings",
           "DATABASE_URL": database_url(), "PYTHONUNBUFFERED": "1"}
    env.pop("DWF_TEST_RUN_ID", None)  # the child's NAME is already the test database
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / f"uvicorn-{os.getpid()}-{time.time_ns()}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "tests.asgi.app:application", "--lifespan", "off",
             "--fd", str(listening.fileno())],
            pass_fds=(listening.fileno(),), env=env, cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    listening.close()  # the child has its own copy
    try:
        wait_for(lambda: answers(base) or process.poll() is not None, timeout=60,
                 message="uvicorn to answer")
        assert process.poll() is None, f"uvicorn exited:\n{log_path.read_text()}"
        yield Served(base, process, log_path)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def signed_in(user: Any) -> str:
    """A session of ``user`` in the database, as a login would leave it: its cookie's value."""
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def test_an_async_view_creates_and_moves_an_instance_through_the_async_twins(served):
    ann = UserFactory(username="ann")
    session = signed_in(ann)

    created_status, created = served.post("/checklists/", session=session)
    moved_status, moved = served.post(f"/checklists/{created['id']}/next/",
                                      {"revision": created["revision"]}, session=session)

    assert (created_status, created["status"], created["step"]) == (201, "running", "s0")
    assert (moved_status, moved["step"], moved["revision"]) == (200, "s1", created["revision"] + 1)
    row = WorkflowInstance.objects.get(pk=created["id"])
    assert (row.owner, row.current_step, row.revision) == (ann, "s1", moved["revision"])
    left = WorkflowEvent.objects.get(instance=row, type="step-leave")
    assert (left.step, left.actor, left.revision) == ("s0", ann, moved["revision"])


def test_an_async_view_answers_a_refusal_and_the_instance_stays(served):
    ann = UserFactory(username="ann")
    session = signed_in(ann)
    _, created = served.post("/checklists/", session=session)
    served.post(f"/checklists/{created['id']}/next/", {"revision": created["revision"]},
                session=session)

    status, stale = served.post(f"/checklists/{created['id']}/next/",
                                {"revision": created["revision"]}, session=session)

    assert (status, stale["code"]) == (412, "stale_revision")
    row = WorkflowInstance.objects.get(pk=created["id"])
    assert (row.current_step, row.revision) == ("s1", created["revision"] + 1)
    assert list(WorkflowEvent.objects.filter(instance=row, type="step-leave")
                .values_list("step", flat=True)) == ["s0"]
