"""The example project mounts the API at /api/, its schema and Swagger UI beside it.

Its settings are not the tests', so it is checked in a Python process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.needs_api, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, re
import django
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from django.test.utils import setup_test_environment

setup_test_environment()
call_command("migrate", verbosity=0)  # a database of its own (DWF_DEMO_DB)
client = Client()
anonymous = {"docs": client.get("/api/docs/"), "schema": client.get("/api/schema/")}
client.force_login(get_user_model().objects.create_user("visitor"))
docs = client.get("/api/docs/")
assets = re.findall(r'(?:src|href)="([^"]+)"', docs.content.decode())
schema = client.get("/api/schema/", {"format": "json"})
operator = Client()
operator.force_login(get_user_model().objects.create_superuser("operator"))
print(json.dumps({
    "docs": docs.status_code,
    "assets": {a: bool(a.startswith("/static/") and finders.find(a[len("/static/"):]))
               for a in assets},
    "schema": schema.status_code,
    "paths": sorted(json.loads(schema.content)["paths"]),
    "anonymous docs": [anonymous["docs"].status_code, anonymous["docs"].get("Location")],
    "anonymous schema": [anonymous["schema"].status_code, anonymous["schema"]["Content-Type"],
                         anonymous["schema"].json()["code"]],
    "anonymous": [Client().get("/api/instances/").status_code,
                  Client().get("/api/instances/").get("WWW-Authenticate")],
    "unknown": [client.get("/api/nope/").status_code, client.get("/api/nope/")["Content-Type"]],
    "metrics": [Client().get("/metrics").status_code, client.get("/metrics").status_code],
    "metrics for an operator": operator.get("/metrics").content.decode(),
}))
"""


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> dict:
    database = tmp_path_factory.mktemp("example") / "db.sqlite3"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "example_project.settings",
           "DWF_DEMO_DB": str(database)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_example_serves_swagger_ui_at_api_docs(example):
    assert example["docs"] == 200


def test_swagger_ui_s_files_are_served_by_the_site_itself_not_a_cdn(example):
    assert example["assets"]
    assert all(example["assets"].values()), example["assets"]


def test_the_example_serves_the_schema_of_the_api_at_api_schema(example):
    assert example["schema"] == 200
    assert "/api/instances/{id}/next/" in example["paths"]


def test_the_example_sends_anonymous_users_from_swagger_ui_to_the_login_page(example):
    assert example["anonymous docs"] == [302, "/accounts/login/?next=/api/docs/"]


def test_the_example_refuses_the_schema_to_anonymous_users_as_json(example):
    assert example["anonymous schema"] == [401, "application/json", "not_authenticated"]


def test_the_example_asks_anonymous_users_for_a_token(example):
    # Session authentication comes first and names no challenge; the token, after it, does
    # (the README's scripts send one; HTTP Basic stays accepted, last, for curl -u).
    assert example["anonymous"] == [401, "Token"]


def test_unknown_urls_under_the_example_s_api_answer_json(example):
    assert example["unknown"] == [404, "application/json"]


def test_the_example_serves_metrics_to_operators_not_to_anyone(example):
    # The test extra has prometheus-client: the example mounts /metrics. The visitor is
    # signed in but may not view instances.
    assert example["metrics"] == [401, 403]
    assert "django_workflows_instances" in example["metrics for an operator"]
