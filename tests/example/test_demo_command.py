"""./scripts/demo itself: started in the background, used through the API and in Chromium,
stopped with Ctrl-C.

The demo runs in a process group (and session) of its own, on a free port
(``DWF_DEMO_PORT``) with a temporary SQLite file (``DWF_DEMO_DB``), so it
neither clobbers nor disturbs a developer's demo, and on the interpreter of this
test run (``DWF_DEMO_PYTHON``), so it shows the Python and Django being tested.
Its payment provider posts real signed webhooks to its server, its emails are
printed in its output (where the tests find the links), and its reminder's timer
and its sleeping invoice's due date are two seconds away. The tests run in order:
Ctrl-C stops it, then it is started again on the same database, and once more with
``--reset``.
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
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import django
import pytest

from django_workflows.webhooks import signature
from tests.shown_times import deadline_as_shown

from .browser import screenshot

pytestmark = [pytest.mark.slow, pytest.mark.needs_api, pytest.mark.needs_q2]

ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE = 120  # seconds: migrations and demo data on a busy machine
ALICE = ("alice", "alice-demo")
OPERATOR = ("operator", "operator-demo")
WEBHOOK_SECRET = "whsec_demo_under_test"  # the provider's and the site's (SHOP_PAYMENTS)
EMAIL_LINK = re.compile(r"http://127\.0\.0\.1:\d+/email/confirm/\S+/")


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
           "DWF_DEMO_PYTHON": sys.executable,
           "SHOP_PAYMENT_WEBHOOK_SECRET": WEBHOOK_SECRET, "SHOP_PAYMENT_REMINDER_AFTER": "2",
           "SHOP_INVOICE_DUE_AFTER": "2"}
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
    # Until they are gone: a server still dying holds its port, and the next demo started
    # on it (--reset) would find "something answers on port".
    deadline = time.monotonic() + 10
    while session_processes(demo.process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


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


def test_a_script_reads_the_api_with_the_token_the_readme_makes(demo, directory):
    made = subprocess.run(
        [sys.executable, "manage.py", "drf_create_token", "alice"], cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
             "DWF_DEMO_DB": str(directory / "demo.sqlite3")},
        capture_output=True, text=True, timeout=60, check=True)
    token = made.stdout.split()[2]  # "Generated token <key> for user alice"
    request = urllib.request.Request(demo.url + "/api/instances/", headers={
        "Authorization": f"Token {token}", "Accept": "application/json"})

    with urllib.request.urlopen(request, timeout=30) as response:
        listed = json.load(response)

    as_alice = call(demo, "GET", "/api/instances/")[1]  # with her password
    assert listed["results"] and listed == as_alice
    request = urllib.request.Request(demo.url + "/api/instances/", headers={
        "Authorization": "Token not-a-token", "Accept": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert (refused.value.code, refused.value.headers["WWW-Authenticate"]) == (401, "Token")


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
    links = len(email_links(demo))
    status, opened = call(demo, "POST", path + "next/")
    assert (status, opened["current_step"], opened["waiting"]["name"]) == (
        200, "email", "email-confirmed")

    # The link the demo emailed (printed in its output): its page, then its button.
    link = wait_until(lambda: email_links(demo)[links:], seconds=30, demo=demo,
                      what="the demo printed no email confirmation link")[0]
    assert confirm_through(link) == 200
    done = call(demo, "GET", path)[1]
    assert (done["status"], done["skipped_steps"]) == ("completed", ["plan"])
    assert done["state"]["email_confirmation"] == {"email": "alice@example.com"}


def email_links(demo: Demo) -> list[str]:
    """The email confirmation links the demo printed, oldest first."""
    return EMAIL_LINK.findall(demo.output())


def confirm_through(link: str) -> int:
    """Open an emailed link, then press its button (with the page's CSRF token)."""
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with browser.open(link, timeout=30) as page:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                          page.read().decode())[1]
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": token}).encode()
    try:
        with browser.open(link, data=body, timeout=30) as answer:
            assert "is confirmed" in answer.read().decode()
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_link_emailed_to_alice_by_the_demo_data_confirms_her_address(demo):
    first = wait_until(lambda: email_links(demo), seconds=30, demo=demo,
                       what="the demo printed no email confirmation link")[0]
    _, page = call(demo, "GET", "/api/instances/?workflow=onboarding&status=running"
                                "&page_size=100")
    [waiting] = [o for o in page["results"] if o["current_step"] == "email"]

    assert confirm_through(first) == 200

    done = call(demo, "GET", f"/api/instances/{waiting['id']}/")[1]
    assert (done["status"], done["state"]["email_confirmation"]) == (
        "completed", {"email": "alice@example.com"})


def order_numbered(demo: Demo, number: str) -> dict | None:
    _, page = call(demo, "GET", "/api/instances/?workflow=order-fulfilment&page_size=100",
                   user=OPERATOR)
    return next((o for o in page["results"] if o["state"]["order_number"] == number), None)


def test_the_slow_order_waits_for_its_webhook_while_its_bank_shows_progress(demo):
    def waiting_for_the_bank():
        order = order_numbered(demo, "D-1004")
        return order if order and order["waiting"] else None

    order = wait_until(waiting_for_the_bank, seconds=60, demo=demo,
                       what="the slow order did not wait for its bank")
    charge = order["operations"][0]["result"]["charge"]
    assert (order["current_step"], order["waiting"]["kind"], order["waiting"]["name"],
            order["waiting"]["correlation"]) == ("confirmation", "signal",
                                                 "payment-confirmed", charge)

    def bank_in_progress():
        _, page = call(demo, "GET", "/api/instances/?workflow=fake-bank&page_size=100",
                       user=OPERATOR)
        bank = next((b for b in page["results"] if b["reference"] == f"bank:{charge}"), None)
        confirm = bank["operations"][0] if bank and bank["operations"] else None
        return confirm if confirm and confirm["progress"] else None

    confirm = wait_until(bank_in_progress, seconds=60, demo=demo,
                         what="the slow bank showed no progress")
    assert confirm["progress"]["message"] == "The bank checks the payment"
    assert confirm["progress"]["total"] == 300  # five minutes: time to watch it in the admin


def test_the_declined_orders_reminder_fires_on_the_workers(demo):
    def reminded():
        _, page = call(demo, "GET", "/api/instances/?workflow=payment-reminder",
                       user=OPERATOR)
        return page["results"] and page["results"][0]["status"] == "completed" and \
            "Subject: Your order D-1002 waits for another card" in demo.output()

    wait_until(reminded, seconds=60, demo=demo,
               what="the declined order's reminder did not fire (its timer: 2 s)")


def test_the_sleeping_invoice_run_asks_on_the_workers_and_a_decision_ends_it(demo):
    def asking():
        _, inbox = call(demo, "GET", "/api/tasks/", user=OPERATOR)
        return next((task for task in inbox["results"]
                     if task["title"] == "Invoice INV-1002: 1 line declined"), None)

    task = wait_until(asking, seconds=90, demo=demo,
                      what="the invoice run INV-1002 did not ask the managers (due in 2 s)")
    run = f"/api/instances/{task['instance']}/"
    _, events = call(demo, "GET", run + "events/?page_size=100", user=OPERATOR)
    assert "timer-wait" in [event["type"] for event in events["results"]]  # it slept
    status, _ = call(demo, "POST", f"/api/tasks/{task['id']}/complete/",
                     {"input": {"decision": "retry", "payment_method": "pm_card_ok"}},
                     user=OPERATOR)
    assert status == 200

    def completed():
        body = call(demo, "GET", run, user=OPERATOR)[1]
        return body if body["status"] == "completed" else None

    done = wait_until(completed, seconds=60, demo=demo,
                      what="the invoice run did not complete after the managers' decision")
    assert done["operations"][0]["result"] == {"invoice": "INV-1002", "charged": [1, 2],
                                               "written_off": []}


def test_the_demo_runs_the_nightly_stock_report_on_its_schedule(demo):
    status, schedules = call(demo, "GET", "/api/schedules/", user=OPERATOR)

    assert status == 200
    [nightly] = [s for s in schedules if s["id"] == "nightly-stock-report"]
    assert (nightly["workflow"], nightly["cron"], nightly["timezone"], nightly["paused"]) == (
        "stock-report", "0 3 * * *", "Europe/Berlin", False)
    due = datetime.fromisoformat(nightly["next_due_at"]).astimezone(ZoneInfo("Europe/Berlin"))
    assert (due.hour, due.minute) == (3, 0)
    # Where the tour sends an operator to pause and resume it.
    admin = signed_in(demo, *OPERATOR)
    with admin.open(demo.url + "/admin/django_workflows/workflowschedule/",
                    timeout=30) as page:
        assert "nightly-stock-report" in page.read().decode()
    assert f"schedules:   {demo.url}/admin/django_workflows/workflowschedule/" in demo.output()


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


def webhook(demo: Demo, event: dict, secret: str = WEBHOOK_SECRET) -> tuple[int, dict]:
    """The payment provider's POST to the demo: ``event``, signed with ``secret``."""
    body = json.dumps(event).encode()
    request = urllib.request.Request(
        demo.url + "/hooks/payments/", data=body, method="POST",
        headers={"Content-Type": "application/json",
                 "Webhook-Signature": signature(body, secret)})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.mark.browser
def test_an_order_waiting_for_its_webhook_moves_on_live_in_the_admin(demo, browser):
    # An order whose bank never confirms by itself (pm_card_unconfirmed): this test is the
    # provider, and chooses when its webhook comes.
    state = {"order_number": "W-1", "customer": {"name": "Alice", "email": "alice@example.com"},
             "items": [{"sku": "MUG", "quantity": 1}], "payment_method": "pm_card_unconfirmed",
             "currency": "EUR", "address": {"country": "DE"}}
    status, order = call(demo, "POST", "/api/instances/",
                         {"workflow": "order-fulfilment", "state": state, "start": True})
    assert status == 201, order
    path = f"/api/instances/{order['id']}/"
    order = wait_until(lambda: (o := call(demo, "GET", path)[1])["waiting"] and o,
                       seconds=60, demo=demo, what="the order did not wait for its bank")
    charge = order["operations"][0]["result"]
    event = {"id": "evt_w1", "type": "charge.succeeded",
             "data": {"object": {"id": charge["charge"], "amount": charge["amount_cents"],
                                 "currency": charge["currency"]}}}

    context = browser.new_context(base_url=demo.url, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        page.goto("/admin/login/?next=/admin/")
        page.fill("#id_username", OPERATOR[0])
        page.fill("#id_password", OPERATOR[1])
        page.click("input[type=submit]")
        page.wait_for_url("**/admin/")
        before = datetime.now(UTC)
        page.goto(f"/admin/django_workflows/workflowinstance/{order['id']}/change/")
        deadline = datetime.fromisoformat(order["waiting"]["until"])
        assert page.inner_text("#dwf-waiting-words") in {
            f"Waiting for the signal payment-confirmed (correlation {charge['charge']}) "
            f"until {shown}" for shown in deadline_as_shown(deadline, before, datetime.now(UTC))}
        assert page.get_attribute("#dwf-current-step", "data-step") == "confirmation"
        screenshot(page, "demo-order-waiting-for-its-webhook")
        page.evaluate("window.dwfNotReloaded = true")

        # A forged webhook changes nothing, on the server or on the page.
        status, refused = webhook(demo, event, secret="whsec_guessed")
        assert (status, refused["code"]) == (403, "signature_mismatch")
        assert call(demo, "GET", path)[1]["current_step"] == "confirmation"

        status, answer = webhook(demo, event)
        assert (status, answer["deliveries"][0]["outcome"]) == (200, "taken")

        # The page follows by itself (it polls): paid, prepared, shipped by the workers.
        page.wait_for_selector('#content-main[data-status="completed"]', timeout=60_000)
        assert page.evaluate("window.dwfNotReloaded") is True
        assert page.locator("#dwf-waiting").count() == 0
        screenshot(page, "demo-order-moved-on-by-its-webhook")
    finally:
        context.close()
    done = call(demo, "GET", path)[1]
    assert done["history"] == ["payment", "confirmation", "preparation", "shipment",
                               "completion"]
    assert done["state"]["payment"] == {"charge": charge["charge"],
                                        "amount_cents": charge["amount_cents"],
                                        "currency": "EUR"}


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
