"""The README's first command, as a newcomer runs it: ``./scripts/demo`` in a fresh clone.

A clone of this repository's HEAD in a temporary folder (the committed files: nothing of
this checkout's .venv or database), and ``./scripts/demo`` run there without
``DWF_DEMO_PYTHON``, from a shell without this test run's settings: it makes its own .venv
with the extras it names (and only those), migrates, creates the demo data, and starts the
server and the worker. Then the operator signs in to the admin, alice opens the wizard and
starts an onboarding from it, and the demo is stopped by its process group, leaving nothing
running. (test_demo_command.py tests what the demo does, on this run's interpreter; this
test tests that a newcomer gets that far.)
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
from django.conf import settings

from tests.fresh_clone import fresh_clone, newcomers_environment

from .test_demo_command import (
    ALICE,
    OPERATOR,
    Demo,
    as_from_a_terminal,
    command_line,
    free_port,
    server_answers,
    session_processes,
    signed_in,
    wait_until,
)

# Marked as the other demo tests are: the pass without extras leaves it out. The demo's
# own .venv gets its extras from ./scripts/demo, not from this run's interpreter.
pytestmark = [pytest.mark.slow, pytest.mark.needs_api, pytest.mark.needs_q2,
              # A new .venv and pip's installs into it, then migrations and the demo data.
              pytest.mark.timeout(600)]

START_DEADLINE = 420  # seconds: python -m venv, pip install, migrate, the demo data
STOP_DEADLINE = 30  # seconds for the demo to stop by itself after TERM (its own: 5 s)
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def newcomers_demo(tmp_path):
    """``./scripts/demo`` in a fresh clone, in a session (and process group) of its own;
    stopped and killed in the end, whatever happened."""
    if not settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        # The demo has its own SQLite database whatever this run's is, and a new .venv
        # costs a minute: once per run, in the SQLite pass.
        pytest.skip("The demo's database is its own SQLite file: it runs in the SQLite pass")
    clone = fresh_clone(tmp_path / "clone")
    port = free_port()
    env = {**newcomers_environment(), "DWF_DEMO_PORT": str(port),
           "DWF_DEMO_DB": str(tmp_path / "demo.sqlite3"), "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "demo.log"
    with log.open("wb") as output:
        process = subprocess.Popen(["./scripts/demo"], cwd=clone, env=env,
                                   stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=as_from_a_terminal)
    demo = Demo(process, f"http://127.0.0.1:{port}", port, log)
    try:
        yield demo
    finally:
        for pid in session_processes(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


def admin_signed_in(demo: Demo, username: str, password: str
                    ) -> tuple[urllib.request.OpenerDirector, str]:
    """The admin's login form sent with its CSRF token; the browser and the page it shows."""
    browser = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with browser.open(demo.url + "/admin/login/?next=/admin/", timeout=30) as form:
        token = CSRF_FIELD.search(form.read().decode())[1]
    body = urllib.parse.urlencode({"username": username, "password": password,
                                   "csrfmiddlewaretoken": token, "next": "/admin/"}).encode()
    with browser.open(demo.url + "/admin/login/?next=/admin/", data=body,
                      timeout=30) as answer:
        assert answer.url == demo.url + "/admin/", f"the admin refused {username}"
        return browser, answer.read().decode()


def stopped_by_its_process_group(demo: Demo) -> list[str]:
    """TERM to the demo's process group, as a terminal's Ctrl-C or a service manager gives
    it; after a deadline, KILL to whatever of its session is left. What was left then."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(demo.process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        demo.process.wait(timeout=STOP_DEADLINE)
    deadline = time.monotonic() + 10  # processes stopped a moment ago may still be exiting
    while (left := session_processes(demo.process.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left_running = [command_line(pid) for pid in left]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(demo.process.pid, signal.SIGKILL)
    return left_running


def test_the_readmes_first_command_runs_the_demo_from_a_fresh_clone(newcomers_demo):
    demo = newcomers_demo
    wait_until(lambda: server_answers(demo.url), seconds=START_DEADLINE, demo=demo,
               what="./scripts/demo in a fresh clone did not answer")
    output = demo.output()
    assert "==> creating .venv" in output, "the demo did not make its own .venv"
    assert f"admin:       {demo.url}/admin/" in output

    # The operator signs in to the admin: its index, then the workflow instances.
    admin, index = admin_signed_in(demo, *OPERATOR)
    assert "/admin/django_workflows/workflowinstance/" in index
    with admin.open(demo.url + "/admin/django_workflows/workflowinstance/",
                    timeout=30) as page:
        assert "order-fulfilment" in page.read().decode(), "the demo's instances are listed"

    # Alice opens the wizard (its page and its script) and presses Start: the POST its
    # script sends, with her session and the page's CSRF token.
    wizard = signed_in(demo, *ALICE)
    with wizard.open(demo.url + "/wizard/", timeout=30) as page:
        html = page.read().decode()
    assert "<h1>Open an account</h1>" in html
    with wizard.open(demo.url + "/static/shop/wizard.js", timeout=30) as script:
        assert script.status == 200
    started = urllib.request.Request(
        demo.url + "/api/instances/", method="POST",
        data=json.dumps({"workflow": "onboarding", "start": True}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json",
                 "X-CSRFToken": re.search(r'data-csrf="([^"]+)"', html)[1]})
    with wizard.open(started, timeout=30) as answer:
        onboarding = json.load(answer)
    assert (answer.status, onboarding["status"], onboarding["current_step"]) == (
        201, "running", "profile")

    assert stopped_by_its_process_group(demo) == [], "left running after TERM"
    assert not server_answers(demo.url)
