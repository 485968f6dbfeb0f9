"""A newcomer follows docs/quickstart.md to the letter, in a new folder, block by block.

The newcomer has a fresh clone of this repository (its HEAD: commit a change to the page
or the package before this test can see it), a new virtual environment, active in their
shell, and nothing else: no extra installed but those the page's ``pip install`` lines
name, none of this test run's settings. The blocks are read from the clone's page, so the
test breaks when the page does. Each block says what it is in its first line, and the test
does with it what a reader does:

* a ``sh`` block's lines are run, ``pip install -e "path/to/clone[...]"`` with the clone's
  path; ``qcluster`` and ``runserver`` are started and left running (the server on a free
  port, not 8000), ``db_worker`` (the Tasks framework's section) is started in the place
  of the ``qcluster``, which the page says to stop first, and ``createsuperuser`` is
  answered through its ``DJANGO_SUPERUSER_*`` variables;
* ``# path`` writes that file, ``# path (add to the end)`` appends to it,
  ``# python manage.py shell`` is typed into the shell, and
  ``# python manage.py shell, only if the step timed out`` only when it did;
* an ``http`` request is sent to the server as the superuser, with the token
  ``drf_create_token`` printed, and the ``json``
  block after it is the part of the answer that must come back: a ``GET`` is asked again
  until it does (the worker runs meanwhile), any other request must answer it at once.

The reader takes their time: before each worker the page starts (while they open a
terminal for it), a day passes, as the worker's sweep sees it when it comes
(``services.sweep(now=...)``), and nothing the page did may have a deadline that falls due
then. A second reader forgets the worker until a day later, and recovers as the page says.

Real processes throughout: ``django-admin startproject``, ``migrate``, a ``qcluster``, a
``runserver`` and a ``db_worker``, with the new environment's interpreter, stopped in the
end whatever happened.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.fresh_clone import fresh_clone, newcomers_environment

# needs_api, needs_q2: the pass without extras leaves it out (the newcomer's environment
# gets its extras from the page, not from this run's interpreter). A new environment and
# pip's installs into it take a minute more than the page's commands.
pytestmark = [pytest.mark.slow, pytest.mark.needs_api, pytest.mark.needs_q2,
              pytest.mark.timeout(600)]

PAGE = Path("docs") / "quickstart.md"  # in the clone
CLONE_ON_THE_PAGE = "path/to/clone"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
APPEND = " (add to the end)"
SHELL = "# python manage.py shell"
IF_TIMED_OUT = "# python manage.py shell, only if the step timed out"
DEADLINE = 30  # seconds for the worker, and for a server to answer
A_DAY = 24 * 3600  # how long a reader may take to open a terminal for a worker
SUPERUSER = {"DJANGO_SUPERUSER_USERNAME": "admin", "DJANGO_SUPERUSER_EMAIL": "admin@example.com",
             "DJANGO_SUPERUSER_PASSWORD": "a long quickstart password"}
# What the worker's sweep does when it comes ``seconds`` from now; what it did, as JSON.
SWEEP_LATER = """
import json
from datetime import timedelta
from django.utils import timezone
from django_workflows import services
report = services.sweep(now=timezone.now() + timedelta(seconds={seconds}))
print(json.dumps({{"fired": report.fired, "report": str(report), "moved": bool(report)}}))
"""


def code_blocks(page: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(page.read_text())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def contains(answer: Any, expected: Any) -> bool:
    """Whether ``answer`` has every key ``expected`` shows, with its value."""
    if isinstance(expected, dict):
        return isinstance(answer, dict) and all(
            key in answer and contains(answer[key], value) for key, value in expected.items())
    if isinstance(expected, list):
        return isinstance(answer, list) and len(answer) == len(expected) and all(
            contains(a, e) for a, e in zip(answer, expected, strict=True))
    return answer == expected


@pytest.fixture(scope="module")
def newcomers_setup(tmp_path_factory) -> tuple[Path, Path]:
    """A fresh clone and a new, empty virtual environment: (clone, environment)."""
    if not settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        # The quickstart's project has its own SQLite database whatever this run's is, and a
        # new environment costs a minute: once per run, in the SQLite pass.
        pytest.skip("The quickstart's project has its own SQLite database: it runs in the "
                    "SQLite pass")
    place = tmp_path_factory.mktemp("newcomer")
    clone = fresh_clone(place / "clone")
    made = subprocess.run([sys.executable, "-m", "venv", str(place / "venv")],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, f"python -m venv failed:\n{made.stderr}"
    return clone, place / "venv"


class Newcomer:
    """Someone with a new folder, a terminal, a fresh clone, an active virtual environment,
    this page and nothing else."""

    def __init__(self, root: Path, clone: Path, venv: Path, *,
                 forgets_the_worker: bool = False) -> None:
        root.mkdir()
        self.root = root
        self.clone = clone
        self.env = newcomers_environment()
        self.env.update(VIRTUAL_ENV=str(venv),  # as `source venv/bin/activate` makes it
                        PATH=f"{venv / 'bin'}{os.pathsep}{self.env['PATH']}")
        self.forgets_the_worker = forgets_the_worker
        self.background: list[tuple[subprocess.Popen, Path, bool]] = []
        self.url = ""
        self.id = ""  # the instance the HTTP requests are about
        self.token = ""  # the superuser's API token, once the page has made it
        self.did: list[str] = []

    # -- the terminal ------------------------------------------------------------------------

    def attempt(self, command: str, stdin: str | None = None, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess:
        return subprocess.run(command, shell=True, cwd=self.root,
                              env={**self.env, **(env or {})}, input=stdin,
                              capture_output=True, text=True, timeout=240)

    def run(self, command: str, stdin: str | None = None, env: dict[str, str] | None = None
            ) -> str:
        done = self.attempt(command, stdin, env)
        assert done.returncode == 0, (
            f"`{command}` failed ({done.returncode}):\n{stdin or ''}\n{done.stdout}\n"
            f"{done.stderr}{self.logs()}")
        return done.stdout

    def start(self, command: str, *, stops_its_children: bool = False) -> None:
        """A command that runs until it is stopped, in a process group of its own."""
        log = self.root / f"background-{len(self.background)}.log"
        with log.open("w") as output:
            process = subprocess.Popen(f"exec {command}", shell=True, cwd=self.root,
                                       env=self.env, stdout=output, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.background.append((process, log, stops_its_children))

    def logs(self) -> str:
        return "".join(f"\n--- {log.name} ---\n{log.read_text(errors='replace')[-3000:]}"
                       for _, log, _ in self.background)

    def stop(self, which: str | None = None) -> None:
        """Stop every background process (or those whose command ends with ``which``), its
        children included; no orphan left."""
        stopping = [entry for entry in self.background
                    if which is None or entry[0].args.endswith(which)]
        for process, _, stops_its_children in stopping:
            # qcluster stops its workers itself; signalled with them, its sentinel dies first
            # and it waits for ever. The server's autoreloader leaves its child behind.
            if stops_its_children:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
            else:
                with_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process, _, _ in stopping:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            with_group(process.pid, signal.SIGKILL)  # what is left of its group
            process.wait(timeout=10)
        if which is not None:  # stopped as the page says: not a process that died
            self.background = [entry for entry in self.background if entry not in stopping]

    def sweep_later(self, seconds: float) -> dict[str, Any]:
        """What the sweep of a worker started ``seconds`` from now does first."""
        return json.loads(self.run("python manage.py shell",
                                   stdin=SWEEP_LATER.format(seconds=seconds)).splitlines()[-1])

    def start_worker(self, command: str, **options: bool) -> None:
        """The reader opens a terminal for the worker, which takes them a day; the worker's
        sweep then finds nothing of the page's fallen due."""
        swept = self.sweep_later(A_DAY)
        assert not swept["moved"], (
            f"`{command}`, started a day after the blocks before it, finds {swept['report']}: "
            f"the page gives work a deadline before it starts the worker, so a reader's pace "
            f"fails it{self.logs()}")
        self.start(command, **options)

    # -- what a block asks for ----------------------------------------------------------------

    def shell_line(self, line: str) -> None:
        words = shlex.split(line, comments=True)
        if not words:
            return
        if words[:2] == ["pip", "install"]:
            extras = [extra for word in words[2:]
                      for extra in re.findall(r"\[([^\]]+)\]", word)[-1:]]
            extras = [name.strip() for group in extras for name in group.split(",")]
            assert extras, f"`{line}`: which extras?"
            assert any(word.startswith(CLONE_ON_THE_PAGE + "[") for word in words), (
                f"`{line}`: installs from where? (the test puts its clone at "
                f"{CLONE_ON_THE_PAGE})")
            words = [word.replace(CLONE_ON_THE_PAGE, str(self.clone), 1) for word in words]
            self.run(shlex.join(words))
            self.did.append(f"pip install [{','.join(extras)}]")
            return
        command = shlex.join(words)  # without its comment
        if words[-1] == "qcluster":
            if self.forgets_the_worker:
                self.did.append("qcluster (forgotten)")
                return
            self.start_worker(command, stops_its_children=True)
            self.did.append("qcluster")
        elif words[-1] == "db_worker":
            assert "qcluster" in self.did, "db_worker in the place of which qcluster?"
            self.stop("qcluster")  # "Stop the qcluster (Ctrl-C in its terminal)"
            self.start_worker(command)
            self.did.append("db_worker")
        elif words[-1] == "runserver":
            port = free_port()
            self.start(f"{command} 127.0.0.1:{port}")
            self.url = f"http://127.0.0.1:{port}"
            self.wait_for(lambda: self.answers("/admin/login/"), "the server did not answer")
            self.did.append("runserver")
        elif "drf_create_token" in words:
            printed = self.run(command)
            self.token = re.fullmatch(r"Generated token (\w+) for user \w+\n", printed)[1]
            self.did.append("drf_create_token")
        elif words[-1] == "createsuperuser":
            self.run(f"{command} --noinput", env=SUPERUSER)
            self.did.append("createsuperuser")
        else:
            self.run(command)
            self.did.append(words[0] if words[0] != "python" else " ".join(words[1:3]))

    def file(self, language: str, code: str) -> None:
        first = code.splitlines()[0]
        if first == SHELL:
            self.run("python manage.py shell", stdin=code)
            self.did.append("shell")
            return
        if first == IF_TIMED_OUT:
            # Only after a check that said so: that check passed, or the test stopped there.
            self.did.append("retry (nothing timed out)")
            return
        name = first[2:]
        if name.endswith(APPEND):
            path = self.root / name.removesuffix(APPEND)
            assert path.exists(), f"{name}: there is no such file to add to"
            with path.open("a") as text:
                text.write("\n" + code)
        else:
            path = self.root / name
            assert path.parent.is_dir(), f"{name}: its folder is made by no step before it"
            path.write_text(code)
        self.did.append(f"{language} {name}")

    def request(self, message: str, expected: dict[str, Any]) -> None:
        head, _, body = message.partition("\n\n")
        [request_line, *header_lines] = head.splitlines()
        method, path = request_line.split()
        headers = dict(line.split(": ", 1) for line in header_lines)
        path = path.replace("<id>", self.id)

        def shown() -> Any:
            answer = self.call(method, path, headers, body.strip())[1]
            return answer if contains(answer, expected) else None

        if method == "GET":  # asked again until the answer is what the page shows
            answer = self.wait_for(shown, f"GET {path} never answered {expected}")
        else:
            status, answer = self.call(method, path, headers, body.strip())
            assert 200 <= status < 300 and contains(answer, expected), (
                f"{method} {path} answered {status}:\n{json.dumps(answer, indent=1)}\n"
                f"not {expected}{self.logs()}")
        if method == "POST" and path == "/api/instances/":
            self.id = answer["id"]
        self.did.append(f"{method} {path.replace(self.id, '<id>') if self.id else path}")

    # -- HTTP -------------------------------------------------------------------------------

    def call(self, method: str, path: str, headers: dict[str, str], body: str = ""
             ) -> tuple[int, Any]:
        assert self.token, "the page sends a request before it makes a token"
        request = urllib.request.Request(self.url + path, method=method,
                                         data=body.encode() if body else None, headers={
            **headers, "Accept": "application/json", "Authorization": f"Token {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def answers(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_for(self, check: Any, what: str) -> Any:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            if value := check():
                return value
            for process, _, _ in self.background:
                assert process.poll() is None, f"{process.args} stopped{self.logs()}"
            time.sleep(0.2)
        raise AssertionError(f"{what} within {DEADLINE}s{self.logs()}")

    def admin_session(self) -> urllib.request.OpenerDirector:
        """The superuser signed in to the admin, as in a browser."""
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        with browser.open(self.url + "/admin/login/", timeout=30) as form:
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                              form.read().decode())[1]
        body = urllib.parse.urlencode({
            "username": SUPERUSER["DJANGO_SUPERUSER_USERNAME"],
            "password": SUPERUSER["DJANGO_SUPERUSER_PASSWORD"],
            "csrfmiddlewaretoken": token, "next": "/admin/"}).encode()
        with browser.open(self.url + "/admin/login/", data=body, timeout=30) as answer:
            assert answer.url == self.url + "/admin/", "the admin refused the superuser"
        return browser


def with_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, sig)


def follow(newcomer: Newcomer, blocks: list[tuple[str, str]]) -> None:
    """These blocks of the page, in order."""
    position = 0
    while position < len(blocks):
        language, code = blocks[position]
        position += 1
        if language == "sh":
            for line in code.splitlines():
                newcomer.shell_line(line)
        elif language in ("python", "ini") and code.startswith("# "):
            newcomer.file(language, code)
        elif language == "http":
            answer_language, answer = blocks[position] if position < len(blocks) else ("", "")
            assert answer_language == "json", f"no json answer after the request:\n{code}"
            position += 1
            newcomer.request(code, json.loads(answer))
        else:
            raise AssertionError(f"The test does not know what to do with this {language!r} "
                                 f"block; say what it is in its first line:\n{code}")


def test_a_newcomer_follows_the_quickstart_to_the_letter_at_their_own_pace(
        newcomers_setup, tmp_path):
    clone, venv = newcomers_setup
    newcomer = Newcomer(tmp_path / "project", clone, venv)
    try:
        follow(newcomer, code_blocks(clone / PAGE))

        # What the page says is there, without a block of its own.
        assert newcomer.call("GET", "/api/schema/?format=json", {})[1]["openapi"] \
            .startswith("3.")
        with newcomer.admin_session().open(
                newcomer.url + "/admin/django_workflows/workflowinstance/", timeout=30) as page:
            assert newcomer.id[:8] in page.read().decode(), "the admin lists the sign-up"
    finally:
        newcomer.stop()

    assert newcomer.did[:3] == ["pip install [api,q2]", "django-admin",
                                "manage.py startapp"]
    for step in ("manage.py migrate", "qcluster", "createsuperuser", "drf_create_token",
                 "runserver",
                 "POST /api/instances/", "GET /api/instances/<id>/", "POST /api/signals/",
                 "pip install [pytest]", "pytest", "pip install [tasks]", "db_worker"):
        assert step in newcomer.did, f"the page no longer says to do {step}: {newcomer.did}"
    assert newcomer.did.count("POST /api/instances/<id>/next/") == 3
    # The worker runs before the first step with background work is entered.
    assert newcomer.did.index("qcluster") < newcomer.did.index("shell")
    # The Tasks section's operation ran as a Task of the database backend, in db_worker
    # (the qcluster was stopped before it was handed out).
    ran = newcomer.run("python manage.py shell -c \"from django_tasks_db.models import "
                       "DBTaskResult; print(DBTaskResult.objects.filter(task_path__endswith="
                       "'.run_attempt', status='SUCCESSFUL').count())\"")
    assert ran.split()[-1] == "1", f"db_worker ran {ran.split()[-1]} attempts"


def test_a_reader_who_starts_the_worker_a_day_late_retries_the_step_as_the_page_says(
        newcomers_setup, tmp_path):
    clone, venv = newcomers_setup
    page = (clone / PAGE).read_text()
    blocks = code_blocks(clone / PAGE)
    retry = next((position for position, (_, code) in enumerate(blocks)
                  if code.startswith(IF_TIMED_OUT)), None)
    assert retry is not None, f"the page says nowhere what to do when a step timed out " \
                              f"(a block starting {IF_TIMED_OUT!r})"
    check = blocks[retry - 1][1]
    assert check.startswith(SHELL), "the page has no check before its retry"
    reader = Newcomer(tmp_path / "project", clone, venv, forgets_the_worker=True)
    try:
        follow(reader, blocks[:retry - 1])  # up to the check, without the worker
        assert "qcluster (forgotten)" in reader.did

        # A day later, the reader starts the worker, whose sweep fires what fell due.
        swept = reader.sweep_later(A_DAY)
        assert swept["fired"] == 1, f"a day later the sweep found {swept['report']}"
        reader.start("python manage.py qcluster", stops_its_children=True)
        # The page's check says what happened, in the words the page tells the reader.
        refused = reader.attempt("python manage.py shell", stdin=check)
        assert refused.returncode != 0, "the check passed a step that timed out"
        said = re.search(r"If the check says `([^`]+)`", page)
        assert said, "the page does not say what the check says when the step timed out"
        assert f"AssertionError: still failed at provision: {said[1]}" in refused.stderr, \
            refused.stderr

        reader.file("python", blocks[retry][1].replace(IF_TIMED_OUT, SHELL, 1))
        reader.run("python manage.py shell", stdin=check)  # passes now
    finally:
        reader.stop()
