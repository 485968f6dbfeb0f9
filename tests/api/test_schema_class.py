"""The schema at /api/schema/ whatever ``DEFAULT_SCHEMA_CLASS`` the project names, or none.

drf-spectacular's decorators build on the class named when the API's modules are
imported, so the schema is read in a process of its own with settings that name
none. The project's own DRF views need drf-spectacular's class: check W040 says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from django_workflows.api import checks

pytestmark = pytest.mark.needs_api

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json
import django
django.setup()
from django.contrib.auth.models import User
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

client = APIClient(raise_request_exception=False)
client.force_authenticate(User(username="reader"))  # the schema reads no rows
response = client.get("/api/schema/", {"format": "json"})
print(json.dumps({
    "schema class": api_settings.DEFAULT_SCHEMA_CLASS.__module__,
    "status": response.status_code,
    "body": response.content.decode(),
}))
"""


@pytest.fixture(scope="module")
def served() -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_drf_defaults"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_project_names_no_schema_class_so_drf_s_own_is_the_default(served):
    assert served["schema class"] == "rest_framework.schemas.openapi"


@pytest.mark.slow
def test_the_schema_is_served_without_drf_spectacular_as_the_default_schema_class(served):
    assert served["status"] == 200, served["body"][:3000]
    schema = json.loads(served["body"])
    assert schema["openapi"].startswith("3.")
    assert "/api/instances/{id}/next/" in schema["paths"]
    assert "/api/instances/{id}/state/" in schema["paths"]


def test_w040_drf_s_own_schema_class_says_what_to_set(settings):
    settings.REST_FRAMEWORK = {key: value for key, value in settings.REST_FRAMEWORK.items()
                               if key != "DEFAULT_SCHEMA_CLASS"}

    (warning,) = checks.check_schema_class()

    assert warning.id == "django_workflows.W040"
    assert "rest_framework.schemas.openapi.AutoSchema" in warning.msg
    assert warning.hint == ('Set REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = '
                            '"drf_spectacular.openapi.AutoSchema".')


def test_w040_is_quiet_with_drf_spectacular_s_schema_class():
    assert checks.check_schema_class() == []
