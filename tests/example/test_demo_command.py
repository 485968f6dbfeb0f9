"""./scripts/demo itself: started in the background, used through the API, stopped with Ctrl-C.

The demo runs in a process group (and session) of its own, on a free port
(``DWF_DEMO_PORT``) with a temporary SQLite file (``DWF_DEMO_DB``), so it
neither clobbers nor disturbs a developer's demo, and on the interpreter of this
test run (``DWF_DEMO_PYTHON``), so it shows the Python and Django being tested.
The tests run in order: Ctrl-C stops it, then it is started again on the same
database, and once more with ``--reset``.
"""

from __future__ import annotations

import base64
import contextlib
import http.cookiejar
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import django
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.needs_api, pytest.mark.needs_q2]

ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE = 120  # seconds: migrations and demo data on a busy machine
ALICE = ("alice", "alice-demo")
OPERATOR = ("operator", "operator-demo")


@dataclass
class Demo:
    process: subprocess.Popen
    url: str
    port: int
    log: Path
    # What the tests leave for the tests after them: a signed-in browser's cookies, ids.
    kept: dict = field(default_factory=dict)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session_processes(session: int) -> list[int]:
    """Processes in ``session``: the demo, and everything it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rindex(")") + 2:].split()
        state, sid = fields[0], int(fields[3])
        if sid == session and state != "Z":
            found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"{pid} (gone)"


def call(demo: Demo, method: str, path: str, body: dict | None = None,
         user: tuple[str, str] = ALICE) -> tuple[int, dict]:
    """One API request with HTTP Basic authentication; (status, JSON body)."""
    request = urllib.request.Request(
        demo.url + path, method=method,
        data=None if body is None else json.dumps(body).encode())
    token = base64.b64encode(":".join(user).encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    request.add_header("Accept", "application/json")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def wait_until(check, *, seconds: float, what: str, demo: Demo):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        assert demo.process.poll() is None, f"the demo stopped:\n{demo.output()}"
        time.sleep(0.5)
    raise AssertionError(f"{what} within {seconds}s; the demo said:\n{demo.output()}")


def server_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/accounts/login/", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def stop(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def as_from_a_terminal() -> None:
    """Ctrl-C and SIGTERM as a terminal gives them: a shell started with a signal ignored
    cannot trap it, and code run earlier in this process may have ignored SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start_demo(directory: Path, port: int, *arguments: str, log_name: str = "demo.log"
               ) -> Demo:
    """``./scripts/demo`` with its database in ``directory``, answering on ``port``."""
    env = {**os.environ, "DWF_DEMO_PORT": str(port),
           "DWF_DEMO_DB": str(directory / "demo.sqlite3"), "PYTHONUNBUFFERED": "1",
           "DWF_DEMO_PYTHON": sys.executable}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the tests' settings are not the demo's
    log = directory / log_name
    with log.open("wb") as output:
        process = subprocess.Popen([str(ROOT / "scripts" / "demo"), *arguments], cwd=ROOT,
                                   env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=as_from_a_terminal)
    running = Demo(process, f"http://127.0.0.1:{port}", port, log)
    try:
        wait_until(lambda: server_answers(running.url), seconds=START_DEADLINE,
                   what="the demo's server did not answer", demo=running)
    except BaseException:
        stop_demo(running)
        raise
    return running


def stop_demo(demo: Demo, *, at_once: bool = False) -> None:
    """Ctrl-C, and whatever is left of the demo's session killed; ``at_once``: kill it all
    (Ctrl-C lets a running slow payment go on for up to 5 s)."""
    if at_once:
        for pid in session_processes(demo.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if demo.process.poll() is None:
        stop(demo.process, signal.SIGINT)
        try:
            demo.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop(demo.process, signal.SIGKILL)
            demo.process.wait(timeout=10)
    for pid in session_processes(demo.process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="module")
def demo(directory):
    running = start_demo(directory, free_port())
    try:
        yield running
    finally:
        stop_demo(running)  # a test failed before stopping it


def signed_in(demo: Demo, username: str, password: str) -> urllib.request.OpenerDirector:
    """A browser's session: the login form sent with its CSRF token; the cookies kept."""
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with browser.open(demo.url + "/accounts/login/", timeout=30) as form:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                          form.read().decode())[1]
    body = urllib.parse.urlencode({"username": username, "password": password,
                                   "csrfmiddlewaretoken": token}).encode()
    with browser.open(demo.url + "/accounts/login/", data=body, timeout=30) as answer:
        assert answer.url == demo.url + "/wizard/", "the login was refused"
    return browser


def status_for(browser: urllib.request.OpenerDirector, url: str) -> int:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with browser.open(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_demo_prints_where_the_admin_the_wizard_and_the_api_are(demo):
    output = wait_until(lambda: "Ctrl-C stops it" in demo.output() and demo.output(),
                        seconds=30, what="the demo did not say where it runs", demo=demo)

    for line in (f"admin:       {demo.url}/admin/", f"wizard:      {demo.url}/wizard/",
                 f"API:         {demo.url}/api/instances/",
                 f"Swagger UI:  {demo.url}/api/docs/",
                 "alice      password: alice-demo"):
        assert line in output


def test_the_demo_runs_on_the_python_and_django_of_the_test_run(demo):
    output = wait_until(lambda: "Ctrl-C stops it" in demo.output() and demo.output(),
                        seconds=30, what="the demo did not say where it runs", demo=demo)

    assert f"on:          Python {platform.python_version()}, Django {django.get_version()}" \
        in output


def test_the_swagger_ui_asks_for_a_login_and_the_schema_is_served_to_users(demo):
    with urllib.request.urlopen(demo.url + "/api/docs/", timeout=30) as response:
        assert response.url == f"{demo.url}/accounts/login/?next=/api/docs/"
    status, schema = call(demo, "GET", "/api/schema/?format=json")
    assert status == 200
    assert schema["openapi"].startswith("3.")


def test_a_demo_customer_walks_the_wizard_through_the_api(demo):
    status, onboarding = call(demo, "POST", "/api/instances/",
                              {"workflow": "onboarding", "start": True})
    assert status == 201, onboarding
    path = f"/api/instances/{onboarding['id']}/"
    demo.kept["onboarding"] = path

    def fill(instance_path, **values):
        _, current = call(demo, "GET", instance_path)
        status, saved = call(demo, "PATCH", instance_path + "state/",
                             {"state": {**current["state"], **values}})
        assert status == 200, saved

    fill(path, name="Alice", email="not-an-address")
    status, refused = call(demo, "POST", path + "next/")
    assert (status, refused["code"]) == (409, "validation_failed")
    assert call(demo, "GET", path)[1]["errors"] == [
        "email: Enter an email address such as ann@example.com"]
    fill(path, email="alice@example.com")
    assert call(demo, "POST", path + "next/")[1]["current_step"] == "plan"
    assert call(demo, "POST", path + "skip/")[1]["current_step"] == "identity"

    child = f"/api/instances/{call(demo, 'GET', path)[1]['nested']['id']}/"
    fill(child, document_type="passport", document_number="C01X00T47")
    assert call(demo, "POST", path + "next/")[1]["nested"]["current_step"] == "review"
    status, _ = call(demo, "POST", child + "next/")
    assert status == 409  # the review waits for an operator's decision (its task)
    _, inbox = call(demo, "GET", "/api/tasks/", user=OPERATOR)
    [review] = [task for task in inbox["results"] if task["instance"] in child]
    status, done = call(demo, "POST", f"/api/tasks/{review['id']}/complete/",
                        {"input": {"decision": "approved"}}, user=OPERATOR)
    assert (status, done["instance"]["status"]) == (200, "completed")

    assert call(demo, "GET", path)[1]["current_step"] == "confirm"
    fill(path, accept_terms=True)
    status, done = call(demo, "POST", path + "next/")
    assert (status, done["status"], done["skipped_steps"]) == (200, "completed", ["plan"])


def order_numbered(demo: Demo, number: str) -> dict | None:
    _, page = call(demo, "GET", "/api/instances/?workflow=order-fulfilment&page_size=100",
                   user=OPERATOR)
    return next((o for o in page["results"] if o["state"]["order_number"] == number), None)


def test_the_worker_runs_the_slow_payment_showing_its_progress(demo):
    def payment_in_progress():
        order = order_numbered(demo, "D-1004")
        payment = order["operations"][0] if order and order["operations"] else None
        # "retrying" when the provider's random failures made it try again
        return payment if payment and payment["status"] in ("running", "retrying") and \
            payment["progress"] else None

    payment = wait_until(payment_in_progress, seconds=60, demo=demo,
                         what="the slow order's payment showed no progress")

    assert payment["progress"]["message"] == "Waiting for the bank to confirm"
    assert payment["progress"]["total"] == 300  # five minutes: time to watch it in the admin


def test_the_worker_finishes_the_rollback_of_a_failed_order(demo):
    def rolled_back():  # idle again, with its initial state: no order number any more
        _, page = call(demo, "GET", "/api/instances/?workflow=order-fulfilment&status=idle",
                       user=OPERATOR)
        return page["results"][0] if page["results"] else None

    order = wait_until(rolled_back, seconds=60, demo=demo,
                       what="the failed order was not rolled back")

    _, events = call(demo, "GET", f"/api/instances/{order['id']}/events/?page_size=100",
                     user=OPERATOR)
    types = [event["type"] for event in events["results"]]
    assert types.count("compensate") >= 2  # the refund and the released stock
    assert types[types.index("rollback"):].count("compensate") == types.count("compensate")


def test_a_signed_in_customer_reads_the_api_with_the_session(demo):
    browser = signed_in(demo, *ALICE)

    assert status_for(browser, demo.url + "/api/instances/") == 200
    demo.kept["browser"] = browser


def test_ctrl_c_stops_the_server_and_the_worker_and_leaves_no_process(demo):
    assert len(session_processes(demo.process.pid)) > 2  # the script, runserver, qcluster

    stop(demo.process, signal.SIGINT)
    demo.process.wait(timeout=30)

    deadline = time.monotonic() + 10  # processes killed a moment ago may still be exiting
    while (left := session_processes(demo.process.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [command_line(pid) for pid in left] == []
    assert not server_answers(demo.url)


def test_started_again_it_keeps_the_data_the_passwords_and_the_signed_in_sessions(
        demo, directory):
    again = start_demo(directory, demo.port, log_name="again.log")
    try:
        output = wait_until(lambda: "Ctrl-C stops it" in again.output() and again.output(),
                            seconds=30, what="the demo did not say where it runs", demo=again)

        assert "none were created" in output
        assert call(again, "GET", demo.kept["onboarding"])[1]["status"] == "completed"
        assert status_for(demo.kept["browser"], again.url + "/api/instances/") == 200
        assert call(again, "GET", "/api/instances/", user=OPERATOR)[0] == 200
    finally:
        stop_demo(again, at_once=True)


def test_reset_starts_afresh_with_the_demo_data(demo, directory):
    fresh = start_demo(directory, demo.port, "--reset", log_name="reset.log")
    try:
        output = wait_until(lambda: "Ctrl-C stops it" in fresh.output() and fresh.output(),
                            seconds=30, what="the demo did not say where it runs", demo=fresh)

        assert f"==> reset: {directory / 'demo.sqlite3'} removed" in output
        assert "Created demo workflow instances:" in output
        assert call(fresh, "GET", demo.kept["onboarding"])[0] == 404  # gone with the old data
        assert status_for(demo.kept["browser"], fresh.url + "/api/instances/") == 401
        assert order_numbered(fresh, "D-1004")["status"] == "running"  # the slow order, anew
    finally:
        stop_demo(fresh, at_once=True)
